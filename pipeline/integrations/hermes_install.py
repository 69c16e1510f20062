"""Install the ``persona`` plugin into a Hermes home, and select it in config.yaml."""

from __future__ import annotations

import io
import shutil
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from ..atomic import atomic_write_text
from ..config_files import parse_yaml_file
from ..errors import ConfigError
from ..paths import hermes_home as default_hermes_home
from .hermes_provider import PROVIDER_NAME

PLUGIN_INIT = '''"""persona-tier's Hermes memory provider (written by `persona hermes install`).

Hermes discovers this directory; register() hands it a MemoryProvider.
"""

import sys

try:
    import {package}  # noqa: F401
except ImportError:
    # Hermes runs in its own environment: find persona-tier where it was installed.
    for _path in {paths!r}:
        if _path not in sys.path:
            sys.path.append(_path)

from {package}.integrations.hermes_provider import PersonaMemoryProvider


def register(ctx):
    ctx.register_memory_provider(PersonaMemoryProvider())
'''

PLUGIN_YAML = f"""name: {PROVIDER_NAME}
version: "{{version}}"
description: The L3 persona tier - durable behavioural facts about the user, pinned per session.
"""


# Inside the plugin directory: the memory.provider that --activate replaced, for uninstall to put back.
PREVIOUS_FILE = "previous-provider"


@dataclass(frozen=True)
class InstallResult:
    plugin_dir: Path
    config: Path | None  # the config.yaml that was edited, if any


def plugin_dir(hermes_home: Path | None) -> Path:
    return (hermes_home or default_hermes_home()).expanduser() / "plugins" / PROVIDER_NAME


def install_plugin(hermes_home: Path | None, *, activate: bool = False) -> InstallResult:
    """Write the plugin directory (replacing an older copy) and optionally select it."""
    from importlib.metadata import PackageNotFoundError, version

    target = plugin_dir(hermes_home)
    package_root = str(Path(__file__).resolve().parents[2])
    paths = [package_root, sysconfig.get_paths()["purelib"]]
    try:
        installed = version("persona-tier")
    except PackageNotFoundError:
        installed = "0"
    init = PLUGIN_INIT.format(package=__name__.split(".")[0], paths=paths)
    atomic_write_text(target / "__init__.py", init)
    atomic_write_text(target / "plugin.yaml", PLUGIN_YAML.format(version=installed))
    config = None
    if activate:
        config_path = target.parents[1] / "config.yaml"
        previous = _current_provider(config_path)
        if previous != PROVIDER_NAME:  # a second install must not record persona as its own predecessor
            atomic_write_text(target / PREVIOUS_FILE, previous or "")
        config = _set_provider(config_path, PROVIDER_NAME)
    return InstallResult(target, config)


def uninstall_plugin(hermes_home: Path | None) -> InstallResult:
    """Reverse install: restore the provider that --activate replaced, then remove the plugin directory."""
    target = plugin_dir(hermes_home)
    config_path = target.parents[1] / "config.yaml"
    config = None
    if _current_provider(config_path) == PROVIDER_NAME:
        saved = target / PREVIOUS_FILE
        previous = saved.read_text(encoding="utf-8").strip() if saved.exists() else ""
        config = _set_provider(config_path, previous or None)
    if target.is_dir():
        shutil.rmtree(target)
    return InstallResult(target, config)


def _current_provider(config_path: Path) -> str | None:
    if not config_path.exists():
        return None
    document = parse_yaml_file(config_path)
    memory = document.get("memory") if isinstance(document, dict) else None
    provider = memory.get("provider") if isinstance(memory, dict) else None
    return str(provider) if provider is not None else None


def _set_provider(config_path: Path, provider: str | None) -> Path:
    """Set (or, with None, remove) memory.provider with a round trip that keeps comments and order."""
    document = parse_yaml_file(config_path) if config_path.exists() else None
    if document is None:
        document = CommentedMap()
    if not isinstance(document, CommentedMap):
        raise ConfigError([f"{config_path}: the top level must be a mapping"])
    memory = document.get("memory")
    if memory is None:
        memory = document["memory"] = CommentedMap()
    if not isinstance(memory, dict):
        raise ConfigError([f"{config_path}: memory must be a mapping"])
    if provider is None:
        memory.pop("provider", None)
        if not memory:
            del document["memory"]  # an empty mapping would dump as a stray `{}`
    else:
        memory["provider"] = provider
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    mode = config_path.stat().st_mode & 0o777 if config_path.exists() else 0o600
    atomic_write_text(config_path, buffer.getvalue(), mode=mode)
    return config_path
