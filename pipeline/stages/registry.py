"""Stages are plain typed functions, registered by name.

A stage looks like ``rank(facts: FactSet, *, ctx: StageContext, options:
RankOptions) -> RankedPersona``. Built-in stages register exactly as a
third-party one would: with :func:`stage`, in a module that is imported
(third-party packages name theirs under the ``persona_tier.stages`` entry
point group).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..errors import StageError

ENTRY_POINT_GROUP = "persona_tier.stages"


class StageOptions(BaseModel):
    """Base of every stage's options: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NoOptions(StageOptions):
    pass


@dataclass(frozen=True)
class StageSpec:
    name: str
    func: Callable[..., Any]
    options: type[StageOptions]
    accepts: type
    returns: type
    per_target: bool  # runs once per output target, after the shared stages
    doc: str
    origin: str  # the module that registered it (a built-in's is pipeline.stages.NAME)


_STAGES: dict[str, StageSpec] = {}


def stage(
    name: str, *, options: type[StageOptions] = NoOptions, per_target: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a stage. Its input and output types come from its annotations.

    A name is registered once: a second stage under a taken name (a built-in's
    included) is a StageError naming both modules, so no package can replace
    a stage silently.
    """

    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        hints = typing.get_type_hints(func)
        params = [p for p in func.__code__.co_varnames[: func.__code__.co_argcount]]
        if len(params) != 1 or params[0] not in hints or "return" not in hints:
            raise StageError(f"stage {name!r} must take one annotated positional input and annotate its return")
        taken = _STAGES.get(name)
        if taken is not None and taken.func is not func:
            raise StageError(f"stage {name!r} from {func.__module__} is already registered by {taken.origin}; "
                             "give it another name")
        _STAGES[name] = StageSpec(
            name=name,
            func=func,
            options=options,
            accepts=hints[params[0]],
            returns=hints["return"],
            per_target=per_target,
            doc=(func.__doc__ or "").strip().splitlines()[0] if func.__doc__ else "",
            origin=func.__module__,
        )
        return func

    return register


def unregister(name: str) -> None:
    """Remove a stage (a test's, or a plugin's being unloaded); unknown names are ignored."""
    _STAGES.pop(name, None)


def known_stages() -> dict[str, StageSpec]:
    """Every registered stage, built-in and third-party."""
    _load()
    return dict(_STAGES)


def registered(entries: Sequence[str | dict[str, Any]]) -> tuple[StageSpec | None, ...] | None:
    """The stage each pipeline entry names, as registered now (None for an unknown name); None when an entry is
    neither a name nor a one-key mapping. A plan of ``entries`` stays valid while this answer is the same."""
    _load()
    found = []
    for entry in entries:
        name = entry if isinstance(entry, str) else next(iter(entry)) if isinstance(entry, dict) and len(entry) == 1 \
            else None
        if not isinstance(name, str):
            return None
        found.append(_STAGES.get(name))
    return tuple(found)


def get_stage(name: str) -> StageSpec:
    stages = known_stages()
    if name not in stages:
        raise StageError(f"unknown stage {name!r}; known stages: {', '.join(sorted(stages))}")
    return stages[name]


_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    from . import cap, extract, rank, render, write  # noqa: F401  (importing them registers the built-ins)

    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        entry.load()
    _loaded = True
