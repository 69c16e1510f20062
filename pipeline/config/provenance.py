"""Merging config layers while remembering where each value came from.

pydantic-settings has no "which source set this value"; we merge the layers
ourselves, in precedence order, and keep a map from each leaf's key path to a
human description of its source. The same map names the source of a bad
value in error messages.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .files import ConfigLayer, Path_, deep_merge
from .urls import redact

Provenance = dict[Path_, str]
M = TypeVar("M", bound=BaseModel)


def merge_layers(layers: list[ConfigLayer]) -> tuple[dict[str, Any], Provenance]:
    """Deep-merge layers given lowest precedence first; record each leaf's source."""
    merged: dict[str, Any] = {}
    provenance: Provenance = {}
    for layer in layers:
        merged = deep_merge(merged, layer.data)
        for path in _leaves(layer.data, ()):
            _drop_below(provenance, path)
            provenance[path] = layer.describe(path)
    return merged, provenance


def _leaves(data: Mapping[str, Any], prefix: Path_) -> list[Path_]:
    out: list[Path_] = []
    for key, value in data.items():
        path = (*prefix, key)
        if isinstance(value, Mapping):
            # An empty mapping sets nothing under a deep merge, so it claims nothing.
            out.extend(_leaves(value, path))
        else:
            out.append(path)
    return out


def _drop_below(provenance: Provenance, path: Path_) -> None:
    for known in [p for p in provenance if p[: len(path)] == path or path[: len(p)] == p]:
        del provenance[known]


def source_of(provenance: Provenance, path: Path_) -> str:
    """The source of ``path``, or of its nearest recorded ancestor or descendant."""
    for end in range(len(path), 0, -1):
        if path[:end] in provenance:
            return provenance[path[:end]]
    below = [source for p, source in provenance.items() if p[: len(path)] == path]
    return below[0] if below else "default"


def validate_layers(
    model: type[M], layers: list[ConfigLayer], extra_problems: list[str] | None = None
) -> tuple[M, Provenance]:
    """Check every layer for unknown keys, merge, validate; report all problems at once."""
    problems = list(extra_problems or [])
    cleaned = []
    for layer in layers:
        data, unknown = _strip_unknown(model, layer.data, ())
        problems += [f"unknown key {'.'.join(path)} in {layer.describe(path)}{hint}" for path, hint in unknown]
        cleaned.append(dataclasses.replace(layer, data=data))
    merged, provenance = merge_layers(cleaned)
    try:
        settings = model(**merged)
    except ValidationError as error:
        problems += [_describe_error(item, provenance) for item in error.errors()]
        raise ConfigError(problems) from None
    if problems:
        raise ConfigError(problems)
    return settings, provenance


def _describe_error(item: Any, provenance: Provenance) -> str:
    path = tuple(str(part) for part in item["loc"])
    if not path:  # a whole-model check; its message names its own keys
        return str(item["msg"]).removeprefix("Value error, ")
    dotted = ".".join(path) or "(top level)"
    source = source_of(provenance, path)
    if item["type"] == "extra_forbidden":
        return f"unknown key {dotted} in {source}"
    value = item.get("input")
    shown = repr(redact(value)) if not isinstance(value, Mapping) else "a mapping"
    message = str(item["msg"])
    return f"{dotted}: {message[:1].lower()}{message[1:]} (got {shown}, from {source})"


def _strip_unknown(model: type[BaseModel], data: Any, prefix: Path_) -> tuple[Any, list[tuple[Path_, str]]]:
    """Drop keys the model does not declare; return them with a 'did you mean' hint."""
    if not isinstance(data, Mapping):
        return data, []
    kept: dict[str, Any] = {}
    unknown: list[tuple[Path_, str]] = []
    fields = model.model_fields
    for key, value in data.items():
        path = (*prefix, key)
        if key not in fields:
            unknown.append((path, _hint(key, list(fields), prefix)))
            continue
        kept[key], below = _strip_child(fields[key].annotation, value, path)
        unknown += below
    return kept, unknown


def _strip_child(annotation: Any, value: Any, path: Path_) -> tuple[Any, list[tuple[Path_, str]]]:
    child_model = _model_in(annotation)
    if child_model is not None:
        return _strip_unknown(child_model, value, path)
    value_model = _dict_value_model(annotation)
    if value_model is not None and isinstance(value, Mapping):
        kept, unknown = {}, []
        for name, item in value.items():
            kept[name], below = _strip_unknown(value_model, item, (*path, str(name)))
            unknown += below
        return kept, unknown
    return value, []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        models = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
        return models[0] if len(models) == 1 else None
    return None


def _dict_value_model(annotation: Any) -> type[BaseModel] | None:
    if typing.get_origin(annotation) is dict:
        args = typing.get_args(annotation)
        return _model_in(args[1]) if len(args) == 2 else None
    return None


def _hint(key: str, candidates: list[str], prefix: Path_) -> str:
    match = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return f" (did you mean {'.'.join((*prefix, match[0]))}?)" if match else ""
