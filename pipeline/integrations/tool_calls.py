"""Calling a persona tool the way a host does: its arguments validated against its signature (the surface fills
the bound ones, never the model), its schema in OpenAI function format, and an answer that is always JSON."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError, create_model

from ..errors import InputError, PersonaError

log = logging.getLogger(__name__)
Tool = Callable[..., dict[str, Any]]


def _fields(tool: Tool, hidden: frozenset[str]) -> dict[str, Any]:
    return {name: (param.annotation, ... if param.default is inspect.Parameter.empty else param.default)
            for name, param in inspect.signature(tool, eval_str=True).parameters.items() if name not in hidden}


def openai_schema(tool: Tool, *, name: str | None = None, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The tool in OpenAI function format, from the same signature the MCP SDK reads.

    ``hidden`` parameters are filled in by the host surface and not offered to the model.
    """
    model: type[BaseModel] = create_model(f"{tool.__name__}_args", **_fields(tool, hidden))
    schema = model.model_json_schema()
    schema.pop("title", None)
    return {"name": name or tool.__name__, "description": inspect.getdoc(tool) or "", "parameters": schema}


def call(tools: Mapping[str, Tool], name: str, args: Mapping[str, Any],
         bound: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate ``args`` against the tool's signature, then call it.

    ``bound`` values are set by the host surface (the caller's own profile and
    session); the model may not pass them, so no user can reach another's persona.
    """
    if name not in tools:
        raise InputError(f"unknown tool {name!r}; known tools: {', '.join(sorted(tools))}")
    tool = tools[name]
    bound = {key: value for key, value in (bound or {}).items() if key in inspect.signature(tool).parameters}
    model: type[BaseModel] = create_model(f"{name}_args", __config__={"extra": "forbid"},
                                          **_fields(tool, frozenset(bound)))
    try:
        validated = model.model_validate(dict(args))
    except ValidationError as error:
        details = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg'].lower()}"
                            for e in error.errors())
        raise InputError(f"invalid arguments for {name}: {details}") from None
    return tool(**validated.model_dump(), **bound)


def error_json(message: str) -> str:
    """An error answer in the tool contract's shape."""
    return json.dumps({"status": "error", "error": message}, ensure_ascii=False)


def call_json(tools: Mapping[str, Tool], name: str, args: Any, bound: Mapping[str, Any] | None = None) -> str:
    """:func:`call` for a host: ``args`` may be a JSON string; the answer is always a JSON string, never a raise."""
    try:
        if isinstance(args, str | bytes):
            args = json.loads(args or "{}")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            return error_json("arguments must be a JSON object")
        return json.dumps(call(tools, name, args, bound), ensure_ascii=False, default=str)
    except PersonaError as error:
        return error_json(str(error))
    except (ValueError, RecursionError) as error:  # JSON that does not parse, or nests too deep
        return error_json(f"arguments are not valid JSON: {error}")
    except Exception as error:  # the host must never see an exception from a tool call
        # The traceback may quote fact text, so it goes to DEBUG only.
        log.error("persona tool %s failed: %s", name, type(error).__name__)
        log.debug("persona tool %s traceback", name, exc_info=True)
        return error_json(f"internal error in {name}: {type(error).__name__}")
