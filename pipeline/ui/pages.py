"""What each page shows, read from the store and the pipeline as the CLI reads them; nothing here writes.

Each function returns plain values for one template: the template context is this module's contract.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass

from ..config.presets import PRESETS
from ..config.schema import Settings
from ..render.explain import KEPT, Explanation, FactFate
from ..render.model import TargetReport
from ..scopes import shown as scope_text
from ..stages.runner import run_pipeline
from ..store import Fact, PersonaStore, Proposal
from ..store.supersede import Link

# How a preset may name a limit in a unit other than tokens: a field ending in one of these (another preset
# field may come to declare them; whatever it is called, a number of characters or bytes is shown as such).
UNIT_SUFFIXES = {"chars": "characters", "characters": "characters", "bytes": "bytes"}


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    facts: tuple[Fact, ...]


def facts_by_topic(store: PersonaStore, query: str = "") -> list[Topic]:
    """The profile's facts grouped by topic (topics in name order), those whose text or topic holds ``query``."""
    wanted = query.casefold().strip()
    found = [fact for fact in store.list()
             if not wanted or wanted in fact.content.casefold() or wanted in fact.topic.casefold()]
    found.sort(key=lambda fact: fact.topic.casefold())
    return [Topic(name, tuple(group)) for name, group in itertools.groupby(found, key=lambda fact: fact.topic)]


def scope_label(fact: Fact) -> str:
    return scope_text(fact.scope)


@dataclass(frozen=True, slots=True)
class Bar:
    """One budget, in one unit of the host's: how much of it the text uses."""

    unit: str
    used: int
    limit: int

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit > 0 else 100

    @property
    def over(self) -> bool:
        return self.used > self.limit


@dataclass(frozen=True, slots=True)
class AgentView:
    """What one target gives its agent: the exact text, its budgets, and each fact left out with why."""

    target: str
    host: str
    path: str
    text: str
    bars: tuple[Bar, ...]
    sections: tuple[tuple[str, int], ...]
    left_out: tuple[FactFate, ...]
    kept: int


def agent_views(settings: Settings, store: PersonaStore) -> list[AgentView]:
    """Every target rendered as `persona render --dry-run` would (nothing written), with `persona explain`."""
    reports = run_pipeline(settings, store=store, dry_run=True, explain=True)
    return [_view(settings, report) for report in reports]


def _view(settings: Settings, report: TargetReport) -> AgentView:
    explanation: Explanation = report.explanation
    facts = explanation.facts
    return AgentView(report.target, host_label(settings, report.target), str(report.path), report.text,
                     tuple(bars(settings, report)), explanation.sections,
                     tuple(fact for fact in facts if fact.fate != KEPT), sum(1 for fact in facts if fact.fate == KEPT))


def host_label(settings: Settings, target: str) -> str:
    """Who reads the target: its preset's host, Hermes for the injected target, else nobody named."""
    host = settings.targets[target].host
    preset = PRESETS.get(host or "")
    names = [preset.host if preset is not None else host] if host else []
    if target == settings.injection.target:
        names.append("Hermes Agent (injected)")
    return ", ".join(name for name in names if name) or "no host named"


def bars(settings: Settings, report: TargetReport) -> Iterable[Bar]:
    """The budget in tokens, then each limit the target's host preset declares in characters or bytes."""
    yield Bar("tokens", report.tokens, report.budget)
    preset = PRESETS.get(settings.targets[report.target].host or "")
    for unit, limit in preset_limits(preset):
        used = len(report.text.encode("utf-8")) if unit == "bytes" else len(report.text)
        yield Bar(unit, used, limit)


def preset_limits(preset: object) -> list[tuple[str, int]]:
    """A preset's limits in characters or bytes, from whichever of its fields name one: ``max_chars: 4000``,
    ``limits: {"bytes": 32768}``, or a list of objects with ``unit`` and ``limit`` (none found: no bar)."""
    if preset is None or not is_dataclass(preset):
        return []
    found: list[tuple[str, int]] = []
    for field in fields(preset):
        found += _limits_in(field.name, getattr(preset, field.name))
    return found


def _limits_in(name: str, value: object) -> list[tuple[str, int]]:
    if isinstance(value, Mapping):
        return [pair for key, item in value.items() for pair in _limits_in(str(key), item)]
    if isinstance(value, list | tuple):
        return [pair for item in value for pair in _limits_in(str(getattr(item, "unit", "")),
                                                             getattr(item, "limit", None))]
    unit = next((unit for suffix, unit in UNIT_SUFFIXES.items() if name.endswith(suffix)), None)
    if unit is None or not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return []
    return [(unit, value)]


def proposals(store: PersonaStore) -> list[Proposal]:
    return store.proposals()


def history(store: PersonaStore, persona_id: int) -> list[Link]:
    return store.history(persona_id)
