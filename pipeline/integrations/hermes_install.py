"""Install persona-tier into a Hermes home: as a general plugin beside the user's memory provider, or as one.

Hermes runs a single memory provider, and most users of this tier run
Mnemosyne in that slot. So the default is a general plugin (enabled in
``plugins.enabled``) that works beside whatever provider is selected; the
exclusive provider (``--as-provider``) is for a Hermes with none selected.
What install changed in config.yaml is recorded in the plugin directory, so
uninstall reverses exactly that.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .. import inputs
from ..config.edit import edit_yaml_file
from ..config.files import parse_yaml_file
from ..config.load import load_settings
from ..config.targets import resolve_target
from ..config.urls import describe_database
from ..errors import ConfigError, PersonaError
from ..fs import bounded_json
from ..fs.locations import HERMES_PLUGIN, hermes_home_override, hermes_plugin_dir, package_root
from ..fs.locations import hermes_home as default_hermes_home
from ..fs.read import real_path
from ..fs.write import atomic_write_bytes, atomic_write_text
from ..store import PersonaStore
from .hermes_mnemosyne import double_injection

NAME = HERMES_PLUGIN  # the plugin directory, the provider name and the plugins.enabled entry
Mode = Literal["plugin", "provider"]

_FIND_PACKAGE = '''import sys

try:
    import {package}  # noqa: F401
except ImportError:
    # Hermes runs in its own environment: find persona-tier where it was installed.
    for _path in {paths!r}:
        if _path not in sys.path:
            sys.path.append(_path)
'''

# Hermes treats a plugin whose __init__.py names its provider API as an exclusive memory
# provider, so the general plugin's file must not mention it.
PLUGIN_INIT = '''"""persona-tier's Hermes plugin (written by `persona hermes install`), beside any memory provider."""

''' + _FIND_PACKAGE + '''
from {package}.integrations.hermes_plugin import register  # noqa: E402,F401
'''

PROVIDER_INIT = '''"""persona-tier's Hermes memory provider (written by `persona hermes install --as-provider`).

Hermes discovers this directory; register() hands it a MemoryProvider.
"""

''' + _FIND_PACKAGE + '''
from {package}.integrations.hermes_provider import PersonaMemoryProvider  # noqa: E402


def register(ctx):
    ctx.register_memory_provider(PersonaMemoryProvider())
'''

PLUGIN_YAML = """name: {name}
version: "{version}"
kind: {kind}
description: The L3 persona tier - durable behavioural facts about the user, pinned per session.
"""

STATE_FILE = "install.json"  # inside the plugin directory: what install changed, for uninstall
BACKUP_FILE = "config.yaml.before"  # config.yaml as it was before the first install
LEGACY_STATE_FILE = "previous-provider"  # written by earlier versions (provider mode only)


@dataclass(frozen=True)
class InstallResult:
    plugin_dir: Path
    mode: Mode
    config: Path | None  # the config.yaml that was edited, if any
    provider: str | None  # the memory.provider selected after install (kept, or ours)
    store_empty: bool
    mnemosyne_persona: str | None = None  # where Mnemosyne's own injection of the same file is switched on
    database: str = ""  # which database the persona uses in this home, and why
    hermes_profile: str = "fixed"  # the home's hermes.profile: who gets which persona

    def describe(self) -> str:
        """What happened and what to do next, for the person who ran it."""
        lines = [f"installed the persona {self.mode} in {self.plugin_dir}"]
        if self.database:
            lines.append(self.database)
        if self.config is not None and self.mode == "plugin":
            kept = f"kept memory.provider: {self.provider}; " if self.provider else ""
            lines.append(f"{self.config}: {kept}enabled the plugin in plugins.enabled "
                         "(check with: hermes plugins list)")
        elif self.config is not None:
            lines.append(f"{self.config}: memory.provider is now {NAME} (check with: hermes memory status)")
        else:
            lines.append("not activated: pass --activate to enable it in config.yaml")
        if self.mnemosyne_persona and self.mode == "plugin":
            lines.append(f"Mnemosyne injects the same persona file too (MNEMOSYNE_PERSONA_ENABLED=true in "
                         f"{self.mnemosyne_persona}); the plugin puts its persona in place of Mnemosyne's copy, "
                         "so the prompt carries it once. To turn Mnemosyne's off, set MNEMOSYNE_PERSONA_ENABLED="
                         f"false in {self.mnemosyne_persona}")
        if self.hermes_profile != "fixed":
            lines.extend(_per_user_lines(self.hermes_profile))
        elif self.store_empty:
            lines.append('next: add facts, e.g. persona add "Answers tersely." --topic style '
                         "(or persona import FILE.yaml); the persona is rendered on the first chat")
        lines.append("restart Hermes to load it")
        return "\n".join(lines)


def _per_user_lines(mode: str) -> list[str]:
    """What a per-user hermes.profile means for who gets a persona: a plain `hermes chat` names nobody."""
    if mode == "user_id":
        who, nobody = "each user Hermes names (a messaging platform's user_id)", "names no user"
    else:
        who = ("each user Hermes names, else each API-server client by its X-Hermes-Session-Key "
               "(profile key:KEY)")
        nobody = "names neither a user nor a session key"
    return [f"hermes.profile is {mode}: {who} gets their own persona, rendered at their first request",
            f"a plain hermes chat (or cron) {nobody}, so it gets no persona and the persona tools refuse; "
            "for one user at the terminal, set hermes.profile: fixed",
            'next: add a user\'s facts, e.g. persona add "Answers tersely." --topic style --profile USER_ID']


def plugin_dir(hermes_home: Path | None) -> Path:
    return hermes_plugin_dir(hermes_home)


def install_plugin(hermes_home: Path | None, *, activate: bool = False, as_provider: bool = False) -> InstallResult:
    """Write the plugin directory and, with ``activate``, enable it; safe to run twice."""
    home = inputs.expanded(hermes_home or default_hermes_home())
    target, config_path = plugin_dir(home), home / "config.yaml"
    mode: Mode = "provider" if as_provider else "plugin"
    current = _current_provider(config_path)
    if as_provider and activate and current not in (None, NAME):
        raise ConfigError([
            f"{config_path} selects memory.provider: {current}, and Hermes runs one memory provider, so "
            f"--as-provider would switch {current} off; run without --as-provider to add the persona beside it"
        ])
    state = _read_state(target)
    if state and (state.get("mode") != mode or not activate):
        _restore(config_path, target, state) or _reverse(config_path, state)  # undo the other mode first
        state = {}
    _write_files(target, mode)
    edited = None
    if activate:
        before = _snapshot_config(config_path, target, state)
        state = _merge(state, _activate(config_path, mode, current)) | before
        state["config_sha256"] = _sha(config_path)
        edited = config_path
    _write_state(target, {"mode": mode, **state} if activate else {"mode": mode})
    provider = NAME if (activate and mode == "provider") else current
    doubled = _mnemosyne_persona(home) if mode == "plugin" else None
    return InstallResult(target, mode, edited, provider, _store_is_empty(home), doubled, _database(home),
                         _hermes_profile(home))


def uninstall_plugin(hermes_home: Path | None) -> InstallResult:
    """Reverse install: undo its config.yaml edits, then remove the plugin directory."""
    home = inputs.expanded(hermes_home or default_hermes_home())
    target, config_path = plugin_dir(home), home / "config.yaml"
    state = _read_state(target)
    edited = (_restore(config_path, target, state) or _reverse(config_path, state)) if state else None
    if target.is_dir():
        shutil.rmtree(target)
    return InstallResult(target, state.get("mode", "plugin"), edited, _current_provider(config_path), False)


# -- files --------------------------------------------------------------------


def _write_files(target: Path, mode: Mode) -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("persona-tier")
    except PackageNotFoundError:
        installed = "0"
    # A checkout's root and the environment's site-packages; installed from a wheel, the package sits in that
    # site-packages itself, so the two are one path, listed once.
    paths = list(dict.fromkeys([str(package_root()), sysconfig.get_paths()["purelib"]]))
    source = (PROVIDER_INIT if mode == "provider" else PLUGIN_INIT).format(package=__name__.split(".")[0],
                                                                           paths=paths)
    kind = "exclusive" if mode == "provider" else "standalone"
    try:
        atomic_write_text(target / "__init__.py", source)
        atomic_write_text(target / "plugin.yaml", PLUGIN_YAML.format(name=NAME, version=installed, kind=kind))
    except OSError as error:
        raise ConfigError([f"cannot write the Hermes plugin into {target}: {error.strerror or error}"]) from None


def _read_state(target: Path) -> dict[str, Any]:
    state_file, legacy = target / STATE_FILE, target / LEGACY_STATE_FILE
    try:
        if state_file.is_file():
            loaded = bounded_json.loads(state_file.read_text(encoding="utf-8"))
            return loaded if isinstance(loaded, dict) else {}
        if legacy.is_file():  # an install by an earlier version: provider mode, activated
            return {"mode": "provider", "previous_provider": legacy.read_text(encoding="utf-8").strip() or None}
    except (OSError, ValueError) as error:
        raise ConfigError([f"cannot read what the earlier install changed ({target}): {error}"]) from None
    return {}


def _write_state(target: Path, state: dict[str, Any]) -> None:
    atomic_write_text(target / STATE_FILE, json.dumps(state, indent=2) + "\n")
    (target / LEGACY_STATE_FILE).unlink(missing_ok=True)


# -- config.yaml ----------------------------------------------------------------


def _current_provider(config_path: Path) -> str | None:
    if not config_path.exists():
        return None
    document = parse_yaml_file(config_path)
    memory = document.get("memory") if isinstance(document, dict) else None
    provider = memory.get("provider") if isinstance(memory, dict) else None
    return str(provider) if provider else None


def _activate(config_path: Path, mode: Mode, current: str | None) -> dict[str, Any]:
    """Make the config.yaml edit for ``mode``; return what was changed, for uninstall."""
    state: dict[str, Any] = {}

    def enable(document: CommentedMap) -> None:
        plugins = _mapping(document, "plugins", state, config_path)
        enabled = plugins.get("enabled")
        if enabled is None:
            enabled = plugins["enabled"] = CommentedSeq()
            state["created"] = [*state.get("created", []), "plugins.enabled"]
        if not isinstance(enabled, list):
            raise ConfigError([f"{config_path}: plugins.enabled must be a list"])
        if NAME not in enabled:
            enabled.append(NAME)
            state["enabled_added"] = True
        disabled = plugins.get("disabled")
        if isinstance(disabled, list) and NAME in disabled:  # as `hermes plugins enable` does
            disabled.remove(NAME)
            state["disabled_removed"] = True

    def select(document: CommentedMap) -> None:
        memory = _mapping(document, "memory", state, config_path)
        state["previous_provider"] = memory.get("provider")
        memory["provider"] = NAME

    if mode == "provider" and current == NAME:
        return {"previous_provider": None}  # selected by hand before: nothing to record
    edit_yaml_file(config_path, enable if mode == "plugin" else select)
    return state


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _snapshot_config(config_path: Path, target: Path, state: dict[str, Any]) -> dict[str, Any]:
    """Keep config.yaml's bytes from before the first install (0600, beside the install record)."""
    if "config_existed" in state:
        return {"config_existed": state["config_existed"]}
    if not config_path.exists():
        return {"config_existed": False}
    atomic_write_bytes(target / BACKUP_FILE, config_path.read_bytes())
    return {"config_existed": True}


def _restore(config_path: Path, target: Path, state: dict[str, Any]) -> Path | None:
    """Put config.yaml back byte for byte, if nobody changed it since install; None if that cannot be done."""
    if "config_sha256" not in state or _sha(config_path) != state["config_sha256"]:
        return None  # edited since: undo only our own edit, and keep theirs
    real = real_path(config_path)
    if not state.get("config_existed"):
        real.unlink(missing_ok=True)
        return config_path
    backup = target / BACKUP_FILE
    if not backup.is_file():
        return None
    atomic_write_bytes(real, backup.read_bytes(), mode=real.stat().st_mode & 0o777)
    return config_path


def _merge(earlier: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """A repeated install adds to what the first recorded; the first recorded provider stays the one to restore."""
    merged = {**now, **{k: v for k, v in earlier.items() if k != "mode"}}
    merged["created"] = sorted(set(earlier.get("created", [])) | set(now.get("created", [])))
    for flag in ("enabled_added", "disabled_removed"):
        merged[flag] = bool(earlier.get(flag) or now.get(flag))
    return {k: v for k, v in merged.items() if v not in ([], False)}


def _mapping(document: CommentedMap, key: str, state: dict[str, Any], config_path: Path) -> CommentedMap:
    node = document.get(key)
    if node is None:
        node = document[key] = CommentedMap()
        state["created"] = [*state.get("created", []), key]
    if not isinstance(node, CommentedMap):
        raise ConfigError([f"{config_path}: {key} must be a mapping"])
    return node


def _reverse(config_path: Path, state: dict[str, Any]) -> Path | None:
    """Undo exactly what :func:`_activate` recorded; leave everything else (and later user edits) alone."""
    if not config_path.exists() or not (state.get("enabled_added") or state.get("disabled_removed")
                                        or "previous_provider" in state):
        return None
    created = set(state.get("created", []))

    def undo(document: CommentedMap) -> None:
        if state.get("enabled_added"):
            plugins = document.get("plugins")
            enabled = plugins.get("enabled") if isinstance(plugins, dict) else None
            if isinstance(enabled, list) and NAME in enabled:
                enabled.remove(NAME)
                if not enabled and "plugins.enabled" in created:
                    del plugins["enabled"]
            if state.get("disabled_removed") and isinstance(plugins, dict):
                disabled = plugins.get("disabled")
                if isinstance(disabled, list) and NAME not in disabled:
                    disabled.append(NAME)
            _drop_if_empty(document, "plugins", created)
        if "previous_provider" in state:
            memory = document.get("memory")
            if isinstance(memory, dict) and memory.get("provider") == NAME:
                if state["previous_provider"]:
                    memory["provider"] = state["previous_provider"]
                else:
                    del memory["provider"]
            _drop_if_empty(document, "memory", created)

    return edit_yaml_file(config_path, undo)


def _drop_if_empty(document: CommentedMap, key: str, created: set[str]) -> None:
    # An empty mapping install created would dump as a stray `{}`; one the user had stays.
    if key in created and isinstance(document.get(key), dict) and not document[key]:
        del document[key]


def _mnemosyne_persona(home: Path) -> str | None:
    """Where Mnemosyne's own persona injection of the file the plugin injects is switched on, or None."""
    try:
        with hermes_home_override(home):
            settings = load_settings()
        return double_injection(home, resolve_target(settings, settings.injection.target).path)
    except Exception:  # a broken config is reported by the commands that use it
        return None


def _database(home: Path) -> str:
    """The ``database: ...`` line for this home, or "" when its settings cannot be read (reported elsewhere)."""
    try:
        with hermes_home_override(home):
            return describe_database(load_settings())
    except PersonaError:
        return ""


def _hermes_profile(home: Path) -> str:
    """This home's hermes.profile, or "fixed" when its settings cannot be read (reported elsewhere)."""
    try:
        with hermes_home_override(home):
            return load_settings().hermes.profile
    except PersonaError:
        return "fixed"


def _store_is_empty(home: Path) -> bool:
    """Whether the store Hermes will use holds no facts yet (read only; nothing is created)."""
    try:
        with hermes_home_override(home):
            settings = load_settings()
        with PersonaStore.from_settings(settings, readonly=True) as store:
            return not any(store.count_by_tier().values())
    except Exception:  # a broken config or database is reported by the commands that use it
        return True
