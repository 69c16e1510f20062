"""Plan and run the declarative pipeline.

The whole chain is checked before any stage runs: names exist, options
validate, each stage accepts what the previous one produces, and the chain
ends in a :class:`TargetReport`. Stages before the first per-target stage run
once (those after extract once per group of targets showing the same scopes);
the rest run for each target.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from .. import inputs
from ..clock import Clock
from ..config.load_sets import waiting_for
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, check_writable, resolve_target
from ..errors import StageError
from ..render.model import FactSet, LeftOut, PersonaFact, Start, TargetReport, fact_label
from ..render.tokens import get_counter
from ..scopes import ScopeFilter, kind_of
from ..scopes import shown as scope_text
from ..store import PersonaStore
from ..store.backend import Connection
from ..store.dialect import SQLITE
from ..store.vanished import sweep
from .context import AFTER_LAST_WRITE, BESIDE_MEMORY, StageContext
from .fingerprint import config_hash
from .ownership import foreign_settled, refusal
from .registry import StageOptions, StageSpec, get_stage, registered


@dataclass(frozen=True)
class PlannedStage:
    spec: StageSpec
    options: StageOptions


def plan(entries: Sequence[str | dict[str, Any]]) -> list[PlannedStage]:
    """Resolve and check a pipeline definition; raise one StageError naming every problem."""
    planned, problems = [], []
    for index, entry in enumerate(entries):
        try:
            planned.append(_plan_entry(index, entry))
        except StageError as error:
            problems.append(str(error))
    if problems:
        raise StageError("; ".join(problems))
    _check_chain(planned)
    return planned


def kept_plan(settings: Settings) -> list[PlannedStage]:
    """:func:`plan` of ``settings.pipeline``, made once for these (frozen) settings while every stage it names is
    the one registered now (a stage unregistered or registered again plans anew); a bad pipeline raises each time."""
    key = registered(settings.pipeline)
    if key is None:
        return plan(settings.pipeline)
    kept: dict[tuple[StageSpec | None, ...], tuple[PlannedStage, ...]] = settings.derived("stage plans", _no_plans)
    steps = kept.get(key)
    if steps is None:
        steps = kept[key] = tuple(plan(settings.pipeline))
    return list(steps)


def _no_plans(_: Settings) -> dict[tuple[StageSpec | None, ...], tuple[PlannedStage, ...]]:
    return {}


def _plan_entry(index: int, entry: str | dict[str, Any]) -> PlannedStage:
    raw: dict[str, Any]
    if isinstance(entry, str):
        name, raw = entry, {}
    elif isinstance(entry, dict) and len(entry) == 1:
        name, raw = next(iter(entry.items()))
        raw = raw or {}
    else:
        raise StageError(f"pipeline[{index}]: expected a stage name or a one-key mapping `name: {{options}}`")
    spec = get_stage(name)
    try:
        return PlannedStage(spec, spec.options.model_validate(raw))
    except ValidationError as error:
        details = ", ".join(
            f"{'.'.join(str(p) for p in item['loc'])}: {item['msg'].lower()}" for item in error.errors()
        )
        raise StageError(f"pipeline[{index}] {name} options: {details}") from None


def _check_chain(planned: list[PlannedStage]) -> None:
    if not planned:
        raise StageError("the pipeline is empty")
    produced: type = Start
    producer = "the start"
    per_target_seen = False
    for step in planned:
        spec = step.spec
        if not issubclass(produced, spec.accepts):
            raise StageError(
                f"stage {spec.name!r} accepts {spec.accepts.__name__} but {producer} produces {produced.__name__}"
            )
        if per_target_seen and not spec.per_target:
            raise StageError(f"stage {spec.name!r} runs once per pipeline and cannot follow a per-target stage")
        per_target_seen = per_target_seen or spec.per_target
        produced, producer = spec.returns, f"stage {spec.name!r}"
    if not issubclass(produced, TargetReport):
        raise StageError(f"the pipeline must end with a stage that produces TargetReport (such as write); {producer} "
                         f"produces {produced.__name__}")


def run_pipeline(
    settings: Settings,
    *,
    store: PersonaStore,
    targets: Sequence[str] | None = None,
    dry_run: bool = False,
    reason: str = "explicit",
    clock: Clock | None = None,
    explain: bool = False,
    overwrite: bool = False,
    resolved: Sequence[ResolvedTarget] | None = None,
    then: Callable[[Connection], None] | None = None,
) -> list[TargetReport]:
    """Render the named targets (default: all, or the ``resolved`` ones given whole, such as a reader's view:
    :mod:`pipeline.inject.views`) and return one report per target.

    ``then`` is sent after the COMMIT of a stored block's write, in its round trip: the tick lock's release, when
    that write is the run's last (one stored target). With ``explain`` (and ``dry_run``), each report also says
    where every fact went. A whole file that is not a
    render of ours is refused before anything is written (:class:`~.ownership.NotOurs`), unless ``overwrite``.
    """
    steps = kept_plan(settings)
    chosen = list(resolved) if resolved is not None else [
        resolve_target(settings, name, profile=store.profile) for name in (targets or list(settings.targets))]
    home = Path(inputs.home())
    chosen = [target for target in chosen if waiting_for(target.path, home) is None]  # its host reads another file
    if not dry_run:
        if store.dialect is SQLITE:  # rows of ours keyed by a fact another tool deleted: one read of ~40 us when
            sweep(store)  # there are none; on a server a round trip, so `persona render` and `status` sweep there
        for target in chosen:
            there = check_writable(settings, target, profile=store.profile)  # no file there is no one's
            if there and target.output == "file" and not overwrite and foreign_settled(store, target.path) is not None:
                raise refusal(target.path, target.name)
    ctx = StageContext(settings, store, get_counter(settings.cap.counter), clock or store.clock, reason, dry_run,
                       explain=explain, overwrite=overwrite)
    ctx.cache[BESIDE_MEMORY] = any(target.scopes.beside for target in chosen)
    if not dry_run:
        ctx.cache["config_hash"] = config_hash(settings)
        ctx.cache[AFTER_LAST_WRITE] = then
    with _gc_paused():
        reports = _run(steps, chosen, ctx)
    ctx.keep_prepared()
    return reports


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: a 100k-fact run allocates ~10^5 acyclic tuples, and the
    collections they trigger cost ~15% of the run while freeing nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _run(steps: list[PlannedStage], chosen: list[ResolvedTarget], ctx: StageContext) -> list[TargetReport]:
    """The shared stages once up to the facts, then per group of targets that show the same scopes (the rest of
    the shared stages see only their facts, so ranking, the budget and the fit apply after the filter), then the
    per-target stages."""
    shared = [s for s in steps if not s.spec.per_target]
    value: Any = Start()
    done = 0
    while done < len(shared) and not isinstance(value, FactSet):
        value = shared[done].spec.func(value, ctx=ctx, options=shared[done].options)
        done += 1
    reports: dict[str, TargetReport] = {}
    for scopes, targets in _by_scopes(chosen).items():
        result = within(value, scopes, explain=ctx.explain) if isinstance(value, FactSet) else value
        for step in shared[done:]:
            result = step.spec.func(result, ctx=ctx, options=step.options)
        for target in targets:
            reports[target.name] = _per_target(steps[len(shared):], result, ctx.for_target(target))
    return [reports[target.name] for target in chosen]


def _per_target(steps: list[PlannedStage], value: Any, ctx: StageContext) -> TargetReport:
    for step in steps:
        value = step.spec.func(value, ctx=ctx, options=step.options)
    return cast(TargetReport, value)


def _by_scopes(chosen: list[ResolvedTarget]) -> dict[ScopeFilter, list[ResolvedTarget]]:
    groups: dict[ScopeFilter, list[ResolvedTarget]] = {}
    for target in chosen:
        groups.setdefault(target.scopes, []).append(target)
    return groups


def within(facts: FactSet, scopes: ScopeFilter, *, explain: bool = False) -> FactSet:
    """The facts a target showing ``scopes`` shows; with ``explain``, the others are left out saying why."""
    own = facts.learned.get(scopes.beside, frozenset()) if scopes.beside else frozenset()
    if not facts.scoped and scopes.everywhere and not own:
        return facts  # the common case: nothing scoped, nothing to filter
    shows = scopes.shows
    shown = tuple(fact for fact in facts.facts if shows(fact.scope) and fact.key not in own)
    shadowed = _shadowed(shown)
    if shadowed:
        shown = tuple(fact for fact in shown if fact.key not in shadowed)
    if not explain:
        return replace(facts, facts=shown, out_of_scope=len(facts.facts) - len(shown))
    out = tuple(LeftOut(fact, _why_out(fact, scopes, own)) for fact in facts.facts
                if not shows(fact.scope) or fact.key in own)
    out += tuple(LeftOut(fact, shadowed[fact.key]) for fact in facts.facts if fact.key in shadowed)
    return replace(facts, facts=shown, left_out=facts.left_out + out, out_of_scope=len(facts.facts) - len(shown))


def _why_out(fact: PersonaFact, scopes: ScopeFilter, own: frozenset[str]) -> str:
    if fact.key in own:
        return f"learned from host {scopes.beside}'s own memory, which that host loads itself"
    return f"out of scope ({scope_text(fact.scope)}; this target shows {scopes.describe()})"


SPECIFIC = {"project": 2, "host": 1, "global": 0}  # where two shown facts hold one key, the narrower scope wins


def _shadowed(shown: tuple[PersonaFact, ...]) -> dict[str, str]:
    """The shown facts another shown fact of the same key outranks (a project's package_manager over the global
    one, in that project's files), each with why, by fact key."""
    holders: dict[str, list[PersonaFact]] = {}
    for fact in shown:
        if fact.slot is not None:
            holders.setdefault(fact.slot, []).append(fact)
    out: dict[str, str] = {}
    for slot, facts in holders.items():
        if len(facts) < 2:
            continue
        winner = max(facts, key=lambda fact: SPECIFIC[kind_of(fact.scope)])
        for fact in facts:
            if SPECIFIC[kind_of(fact.scope)] < SPECIFIC[kind_of(winner.scope)]:
                out[fact.key] = (f"key {slot}: {fact_label(winner.key)} of {scope_text(winner.scope)} holds it here "
                                 f"({scope_text(fact.scope)} gives way)")
    return out
