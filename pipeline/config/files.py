"""Loading YAML config files: environment sections, local overrides, line numbers.

This replaces dynaconf, which the design card named as the file loader. We
measured dynaconf 3.3.5 with ``loaders=[]`` and found that it still rewrites
string values that start with ``@``: ``"@format {env[HOME]}"`` becomes the
home directory (an environment read behind pydantic-settings' back) and
``"@int 12"`` becomes 12. That cannot be switched off, and it also loses which
file and line a value came from, which our error messages need. A small
ruamel loader does the whole job: it keeps strings as written, deep-merges
sections, and knows every key's line.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import inputs
from ..errors import ConfigError
from ..fs.locations import default_config_path
from ..fs.read import describe, read_regular_bytes
from ..fs.yaml import YamlTooComplex, check_yaml
from ..warn_once import ProblemLog

DEFAULT_SECTION = "default"
UNUSED = ProblemLog(logging.getLogger(__name__))

Path_ = tuple[str, ...]


@dataclass
class ConfigLayer:
    """One source's raw values, with what is needed to say where each came from."""

    name: Literal["default", "env", "legacy-env", "override", "file"]
    data: dict[str, Any]
    file: Path | None = None
    lines: dict[Path_, int] = field(default_factory=dict)
    label: Callable[[Path_], str] | None = None  # names the source of a value (an environment variable)
    env_section: bool = False  # a file that has a section named by --env / MNEMOSYNE_ENV

    def describe(self, path: Path_) -> str:
        """Where the value at ``path`` came from, for messages and ``config show``."""
        if self.name == "file":
            line = self.lines.get(path)
            return f"{self.file}:{line}" if line else str(self.file)
        if self.label is not None:
            return self.label(path)
        if self.name == "override":
            return "override " + ".".join(path)
        return self.name


def resolve_config_files(explicit: list[Path] | None, *, environ: Mapping[str, str]) -> list[Path]:
    """The YAML files to read, lowest precedence first, each followed by its local twin.

    Files named explicitly (``--config`` or ``MNEMOSYNE_PERSONA_CONFIG``) must
    exist; the default file is optional.
    """
    if explicit:
        named = [inputs.expanded(Path(p)) for p in explicit]
    elif environ.get("MNEMOSYNE_PERSONA_CONFIG"):
        raw = environ["MNEMOSYNE_PERSONA_CONFIG"].split(os.pathsep)
        named = [inputs.expanded(Path(p)) for p in raw if p]
    else:
        default = default_config_path()
        try:
            named = [default] if default.exists() else []
        except OSError as error:
            raise ConfigError([f"cannot check the default config file {default}: {error.strerror}"]) from None
        return _with_local_twins(named)
    missing = [f"config file {p} does not exist" for p in named if not p.exists()]
    if missing:
        raise ConfigError(missing)
    return _with_local_twins(named)


def local_twin(path: Path) -> Path:
    """``persona.yaml`` -> ``persona.local.yaml`` beside it."""
    return path.with_name(f"{path.stem}.local{path.suffix}")


def _with_local_twins(files: list[Path]) -> list[Path]:
    ordered: list[Path] = []
    for path in files:
        ordered.append(path)
        twin = local_twin(path)
        if twin.is_file():
            ordered.append(twin)
    return ordered


def load_layers(files: list[Path], env_name: str | None) -> list[ConfigLayer]:
    """Parse every file; report all their problems together."""
    layers, problems = [], []
    for path in files:
        try:
            layers.append(load_file_layer(path, env_name))
        except ConfigError as error:
            problems.extend(error.problems)
    if problems:
        raise ConfigError(problems)
    if env_name and env_name.isprintable() and not any(layer.env_section for layer in layers):
        UNUSED.warn(f"no config file defines the section {env_name!r} (--env or MNEMOSYNE_ENV); only the "
                    f"{DEFAULT_SECTION!r} sections apply" + (f" (read: {', '.join(map(str, files))})" if files else ""))
    return layers


def load_file_layer(path: Path, env_name: str | None) -> ConfigLayer:
    """One file's values: its ``default`` section deep-merged with the selected one."""
    from ruamel.yaml.comments import CommentedMap

    document = parse_yaml_file(path)
    if document is None:
        return ConfigLayer("file", {}, path)
    if not isinstance(document, CommentedMap):
        raise ConfigError([f"{path}: the top level must be a mapping of settings"])
    lines: dict[Path_, int] = {}
    if DEFAULT_SECTION in document or (env_name and env_name in document):
        data: dict[str, Any] = {}
        for section in (DEFAULT_SECTION, env_name):
            if section and section in document:
                body = document[section]
                if body is None:
                    continue
                if not isinstance(body, CommentedMap):
                    raise ConfigError([f"{path}: section {section!r} must be a mapping"])
                data = deep_merge(data, to_plain(body, (), lines))
        return ConfigLayer("file", data, path, lines, env_section=bool(env_name) and env_name in document)
    return ConfigLayer("file", to_plain(document, (), lines), path, lines)


def read_yaml_text(path: Path) -> str:
    """A YAML file's text, within the limits of :mod:`yaml_limits`; any failure is a ConfigError naming the file.

    Only a regular file is read (a symlink is followed), so a FIFO or a
    device at the path is refused instead of hanging the command.
    """
    try:
        text = read_regular_bytes(path, confine_symlinks=False).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError([f"{path}: not UTF-8 text ({error.reason} at byte {error.start})"]) from None
    except OSError as error:
        raise ConfigError([f"{path}: cannot read (it {describe(error)})"]) from None
    try:
        check_yaml(text)
    except YamlTooComplex as error:
        raise ConfigError([f"{path}: {error}"]) from None
    return text


def parse_yaml_file(path: Path) -> Any:
    """Round-trip parse, turning any failure into a ConfigError with file:line."""
    return parse_yaml_text(read_yaml_text(path), path)


def parse_yaml_text(text: str, path: Path) -> Any:
    """Round-trip parse of a file's text (already within the limits), failures named with file:line."""
    from ruamel.yaml import YAML  # ruamel loads only when a YAML file is read
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        yaml = YAML(typ="rt")
        yaml.preserve_quotes = True  # so `config set` writes quoting back as it was
        return yaml.load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        raise ConfigError([f"{where}: bad YAML: {error.problem or error.context}"]) from None
    except YAMLError as error:  # a character YAML refuses: its message spans lines
        raise ConfigError([f"{path}: bad YAML: {' '.join(str(error).split())}"]) from None


def to_plain(node: Any, path: Path_, lines: dict[Path_, int]) -> Any:
    """CommentedMap -> dict, recording each key's 1-based line."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            child = (*path, str(key))
            line = node.lc.key(key)[0] if node.lc.data and key in node.lc.data else None
            if line is not None:
                lines[child] = line + 1
            out[str(key)] = to_plain(value, child, lines)
        return out
    if isinstance(node, CommentedSeq):
        return [to_plain(item, path, lines) for item in node]
    if isinstance(node, str):
        return str(node)
    return node


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``; nested mappings merge, everything else replaces."""
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# --set values YAML reads one way only, answered without loading the YAML library (a test holds them to it)
_PLAIN_SCALARS: dict[str, bool] = {"true": True, "false": False}
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")


def parse_value(raw: str) -> Any:
    """A CLI value read as a YAML scalar: ``2000`` is an int, ``true`` a bool."""
    if not raw.strip():
        return raw
    plain = _PLAIN_SCALARS.get(raw)
    if plain is not None or _DECIMAL.fullmatch(raw):
        return int(raw) if plain is None else plain
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        check_yaml(raw)
        return YAML(typ="safe", pure=True).load(raw)
    except YamlTooComplex as error:
        raise ConfigError([f"value {raw[:40]!r}...: {error}"]) from None
    except YAMLError:
        return raw


def nest(flat: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
    """``{("cap", "token_cap"): 9}`` becomes ``{"cap": {"token_cap": 9}}``."""
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        node = nested
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return nested
