"""Writing config files: the commented reference, and round-trip edits.

Both derive everything from the settings model, so the reference can never
drift from the defaults.
"""

from __future__ import annotations

import io
import itertools
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.util import load_yaml_guess_indent

from ..errors import ConfigError, InputError
from ..fs.read import real_path, regular_file_kind
from ..fs.write import atomic_write_text, refuse_protected
from .aliases import renamed
from .files import DEFAULT_SECTION, ConfigLayer, deep_merge, parse_value, parse_yaml_text, read_yaml_text, to_plain
from .provenance import validate_layers
from .schema import Settings, TargetSettings

HEADER = """\
# persona-tier configuration: every setting, with its default.
#
# Precedence, highest first: `persona --set key.path=value`, MNEMOSYNE_PERSONA_*
# environment variables (`__` nests: MNEMOSYNE_PERSONA_CAP__TOKEN_CAP), the five
# legacy flat variables, YAML files (this one, then persona.local.yaml beside
# it), then these defaults. A file may also hold a `default:` section plus
# named sections chosen by MNEMOSYNE_ENV or `persona --env NAME`.
"""


def reference_yaml() -> str:
    """A fully commented YAML document holding every setting at its default."""
    out = [HEADER]
    defaults = Settings().model_dump(mode="json")
    for name, field in Settings.model_fields.items():
        out.append(f"\n# {field.description}\n")
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out.append(f"{name}:\n" + _section(field.annotation, defaults[name], indent="  "))
        else:
            out.append(_field_notes(name) + _dump_value(name, defaults[name], indent=""))
    return "".join(out)


def _field_notes(name: str) -> str:
    """Comments describing the members of a collection setting (each target's keys)."""
    if name != "targets":
        return ""
    lines = [f"#   {key}: {field.description}\n" for key, field in TargetSettings.model_fields.items()]
    return "# Each target's keys:\n" + "".join(lines)


def _section(model: Any, values: dict[str, Any], indent: str) -> str:
    lines = []
    for name, field in model.model_fields.items():
        if field.description:
            lines.append(f"{indent}# {field.description}\n")
        lines.append(_dump_value(name, values[name], indent))
    return "".join(lines)


def _dump_value(name: str, value: Any, indent: str) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.width = 4096
    buffer = io.StringIO()
    yaml.dump({name: value}, buffer)
    text = buffer.getvalue()
    return "".join(indent + line + "\n" for line in text.splitlines())


def set_config_value(path: Path, key: str, raw_value: str, *, env_name: str | None = None,
                     protected: Mapping[Path, str] | None = None) -> Any:
    """Set ``key`` (dotted) in a YAML file, keeping comments, order and quoting.

    The edited document is validated before the file is replaced atomically;
    on any error the file is left as it was. A string setting takes the text
    as written; other settings read it as YAML (``900``, ``true``).
    """
    value = raw_value if _is_text_setting(key) else parse_value(raw_value)

    def change(document: CommentedMap) -> None:
        _assign(_target_section(document, env_name), key.split("."), value, path)
        _validate(document, path, env_name)

    edit_yaml_file(path, change, protected=protected)
    return value


def set_target(path: Path, name: str, target: Mapping[str, Any] | None, *, env_name: str | None = None,
               protected: Mapping[Path, str] | None = None) -> None:
    """Add target ``name`` to a YAML file, or (``target`` None) delete its entry; validated before the write."""

    def change(document: CommentedMap) -> None:
        section = _target_section(document, env_name)
        targets = section.get("targets")
        if target is None:
            if not isinstance(targets, dict) or name not in targets:
                raise ConfigError([f"{path}: no target {name!r} to remove"])
            del targets[name]
            if not targets:
                del section["targets"]
        else:
            if isinstance(targets, dict) and targets.get(name) is not None:
                raise InputError(f"{path}: target {name!r} already exists; give this one another name with --name")
            _assign(section, ["targets", name], CommentedMap(target), path)
        _validate(document, path, env_name)

    edit_yaml_file(path, change, protected=protected)


def edit_yaml_file(path: Path, change: Callable[[CommentedMap], None], *,
                   protected: Mapping[Path, str] | None = None) -> Path:
    """Apply ``change`` to a YAML mapping file with a ruamel round trip; returns the file written.

    A symlink is edited through to its target, so a linked dotfile keeps its
    link and gets the edit; anything but a regular file (a FIFO, a device, a
    directory) is refused. The file keeps its mode; a new one is 0600. Nothing
    is written when ``change`` raises, or when the target is a ``protected``
    path (the store and its journal files, say).
    """
    try:
        real = real_path(path)
    except OSError as error:
        raise ConfigError([f"{path}: {error.strerror}"]) from None
    kind = regular_file_kind(real)
    if kind is not None:
        raise ConfigError([f"{path} is {kind}, not a regular file; refusing to replace it"])
    refuse_protected(real, protected or {}, what=f"config file {path}")
    original = read_yaml_text(real) if real.exists() else ""
    document = parse_yaml_text(original, real) if original.strip() else None
    if document is None:
        document = CommentedMap()
    if not isinstance(document, CommentedMap):
        raise ConfigError([f"{path}: the top level must be a mapping"])
    change(document)
    mode = real.stat().st_mode & 0o777 if real.exists() else 0o600
    try:
        atomic_write_text(real, dump_like(document, original), mode=mode)
    except OSError as error:
        raise ConfigError([f"cannot write {path}: {error.strerror or error}"]) from None
    return real


def dump_like(document: CommentedMap, original: str) -> str:
    """Dump ``document`` in the original's style: its indentation, its line endings, its final newline.

    A round trip then changes only the lines the edit touched.
    """
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # ruamel folds a long value (a deep path) onto a new line at 80 columns otherwise
    if original.strip():
        yaml.indent(**_indentation(original))
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    text = buffer.getvalue()
    if original and not original.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return text.replace("\n", "\r\n") if "\r\n" in original else text


def _indentation(text: str) -> dict[str, int]:
    """The file's own indentation: its nested mappings', and its block sequences' (dash offset included)."""
    _, sequence, offset = load_yaml_guess_indent(text)
    mapping = _mapping_indent(text) or 2
    if offset is None:  # no block sequence yet: a new one is written as PyYAML (and Hermes) writes them
        return {"mapping": mapping, "sequence": 2, "offset": 0}
    return {"mapping": mapping, "sequence": sequence or 2, "offset": offset}


def _mapping_indent(text: str) -> int | None:
    """How far the first nested mapping is indented under its key, or None if nothing nests."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for parent, child in itertools.pairwise(lines):
        outer, inner = len(parent) - len(parent.lstrip()), len(child) - len(child.lstrip())
        if parent.rstrip().split("#")[0].rstrip().endswith(":") and inner > outer and \
                not child.lstrip().startswith("-"):
            return inner - outer
    return None


def _is_text_setting(key: str) -> bool:
    """Whether the setting at ``key`` is a plain string, so its value needs no YAML reading."""
    node: Any = Settings
    for part in key.split("."):
        fields = getattr(node, "model_fields", None)
        if fields is None:
            if typing.get_origin(node) is dict:  # targets.NAME.key
                node = typing.get_args(node)[1]
                continue
            return False
        if part not in fields:
            return False
        node = fields[part].annotation
    return node is str or (typing.get_origin(node) in (typing.Union, types.UnionType)
                            and set(typing.get_args(node)) == {str, type(None)})


def _target_section(document: CommentedMap, env_name: str | None) -> CommentedMap:
    sectioned = DEFAULT_SECTION in document or (env_name and env_name in document)
    if not sectioned and not env_name:
        return document
    name = env_name or DEFAULT_SECTION
    section = document.get(name)
    if section is None:
        section = document[name] = CommentedMap()
    if not isinstance(section, CommentedMap):
        raise ConfigError([f"{name}: is not a mapping, cannot set a key in it"])
    return section


def _assign(node: dict[str, Any], parts: list[str], value: Any, path: Path) -> None:
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = CommentedMap()
        if not isinstance(child, dict):
            raise ConfigError([f"{path}: {part} is not a mapping, cannot set {'.'.join(parts)}"])
        node = child
    node[parts[-1]] = value


def _validate(document: CommentedMap, path: Path, env_name: str | None) -> None:

    data: dict[str, Any] = to_plain(document, (), {})
    if DEFAULT_SECTION in data or (env_name and env_name in data):
        data = deep_merge(data.get(DEFAULT_SECTION) or {}, (data.get(env_name) or {}) if env_name else {})
    validate_layers(Settings, [renamed(ConfigLayer("file", data, path))])


def model_leaves(model: BaseModel, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every (key path, value) of a settings object, in declaration order."""
    leaves: list[tuple[tuple[str, ...], Any]] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        path = (*prefix, name)
        if isinstance(value, BaseModel):
            leaves += model_leaves(value, path)
        elif isinstance(value, dict) and value and all(isinstance(v, BaseModel) for v in value.values()):
            for name_, member in value.items():
                leaves += model_leaves(member, (*path, str(name_)))
        else:
            leaves.append((path, value))
    return leaves
