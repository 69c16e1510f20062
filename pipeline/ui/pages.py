"""What each page shows, read from the store and the pipeline as the CLI reads them; nothing here writes.

Each function returns plain values for one template: the template context is this module's contract.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import inputs
from ..config.load_report import HooksOf, HostReport, host_reports, no_hooks, project_dirs
from ..config.presets import PRESETS
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, project_identity, resolve_target
from ..errors import ConfigError, PersonaError
from ..render.explain import DEMOTED, KEPT, SUPERSEDED, Explanation, FactFate
from ..render.limits import measure
from ..render.model import TargetReport
from ..render.sanitize import inline
from ..render.tokens import get_counter
from ..scopes import shown as scope_text
from ..stages.runner import run_pipeline
from ..store import Fact, PersonaStore, Proposal
from ..store.births import projects
from ..store.supersede import Link
from ..text import spellings

UNITS = {"chars": "characters"}  # how a limit's unit reads on the page
HISTORY_FATES = (SUPERSEDED, DEMOTED)  # left out of every target alike, for what happened to the fact


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    facts: tuple[Fact, ...]


def facts_by_topic(store: PersonaStore, query: str = "") -> list[Topic]:
    """The profile's facts grouped by topic (topics in name order), those whose text or topic holds ``query``."""
    wanted = query.casefold().strip()
    every = store.list()
    shown = spellings((fact.topic, fact.id) for fact in every)  # `Git` and `git` are one topic, as renders show
    found = [fact for fact in every
             if not wanted or wanted in fact.content.casefold() or wanted in fact.topic.casefold()]
    found.sort(key=lambda fact: (shown[fact.topic].casefold(), shown[fact.topic]))
    return [Topic(name, tuple(group)) for name, group in itertools.groupby(found, key=lambda f: shown[f.topic])]


def scope_label(fact: Fact) -> str:
    return scope_text(fact.scope)


def writer_label(writer: str | None) -> str:
    """Who wrote a fact, short for its column: a path's last part (``adopt:CLAUDE.md``); the page's title shows
    it whole."""
    if not writer:
        return "-"
    kind, colon, rest = writer.partition(":")
    path = rest.replace("\\", "/").rstrip("/")
    return f"{kind}{colon}{path.rpartition('/')[2]}" if "/" in path else writer


def user_projects(settings: Settings, store: PersonaStore) -> list[str]:
    """The user's projects, by identity in name order: those the profile keeps facts for and those its targets
    belong to (the add form offers each as a scope)."""
    with store.read() as conn:
        found = set(projects(conn, store.profile))
    for target in settings.targets.values():
        if target.project:
            with contextlib.suppress(ConfigError):
                found.add(project_identity(target.project))
    return sorted(found)


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
    loads: tuple[HostReport, ...] = ()  # per project, everything the target's host loads beside this file


@dataclass(frozen=True, slots=True)
class AgentsPage:
    """What each agent sees, and the facts every target leaves out alike (superseded, demoted), said once."""

    agents: tuple[AgentView, ...]
    history: tuple[FactFate, ...]


def agent_views(settings: Settings, store: PersonaStore, hooks_of: HooksOf = no_hooks) -> list[AgentView]:
    """Every target rendered as `persona render --dry-run` would (nothing written), with `persona explain`, and
    the whole load set of its host in each project where the host loads its file (with the session-start hook
    ``hooks_of`` finds)."""
    return list(agents_page(settings, store, hooks_of).agents)


def agents_page(settings: Settings, store: PersonaStore, hooks_of: HooksOf = no_hooks) -> AgentsPage:
    """:func:`agent_views`, each target's left-out facts without the history every target leaves out alike, which
    the page shows once."""
    reports = run_pipeline(settings, store=store, dry_run=True, explain=True)
    loads = host_loads(settings, store, hooks_of)
    history = next((tuple(fact for fact in report.explanation.facts if is_history(fact.fate)) for report in reports),
                   ())
    return AgentsPage(tuple(_view(settings, report, loads) for report in reports), history)


def is_history(fate: str) -> bool:
    """A fate that is the fact's history, not the target's choice: the same for every target of the profile."""
    return fate.startswith(HISTORY_FATES)


def host_loads(settings: Settings, store: PersonaStore, hooks_of: HooksOf = no_hooks) -> list[HostReport]:
    """As `persona targets check` measures them, in every project a target names and the working directory; the
    session-start hooks are what ``hooks_of`` finds (`persona ui` reads them as the CLI does)."""
    targets: list[ResolvedTarget] = []
    for name, target in settings.targets.items():
        try:
            targets += [resolve_target(settings, name, profile=store.profile)] if target.output != "store" else []
        except PersonaError:  # another profile's file: not this user's to show
            continue
    return host_reports(settings, targets, project_dirs(settings, [Path.cwd()]),
                        lambda: [inline(fact.content) for fact in store.list()], hooks_of, Path(inputs.home()))


def _view(settings: Settings, report: TargetReport, loads: list[HostReport]) -> AgentView:
    explanation: Explanation = report.explanation
    facts = explanation.facts
    path = report.path.resolve()
    return AgentView(report.target, host_label(settings, report.target), str(report.path), report.text,
                     tuple(bars(settings, report)), explanation.sections,
                     tuple(fact for fact in facts if fact.fate != KEPT and not is_history(fact.fate)),
                     sum(1 for fact in facts if fact.fate == KEPT),
                     tuple(load for load in loads if any(file.path == path for file in load.files)))


def host_label(settings: Settings, target: str) -> str:
    """Who reads the target: its preset's host, Hermes for the injected target, else nobody named."""
    host = settings.targets[target].host
    preset = PRESETS.get(host or "")
    names = [preset.host if preset is not None else host] if host else []
    if target == settings.injection.target:
        names.append("Hermes Agent (injected)")
    return ", ".join(name for name in names if name) or "no host named"


def bars(settings: Settings, report: TargetReport) -> Iterable[Bar]:
    """The token budget, then each limit of the host the target declares (`targets.NAME.limits`, which its
    preset wrote) in that limit's unit, measured as the cap measures it."""
    yield Bar("tokens", report.tokens, report.budget)
    counter = get_counter(settings.cap.counter)
    for limit in settings.targets[report.target].limits:
        if limit.unit == "tokens" and limit.amount == report.budget:
            continue  # the budget's own bar already says it
        unit = UNITS.get(limit.unit, limit.unit) + (" (ours, of the whole chain)" if limit.scope == "chain" else "")
        yield Bar(unit, measure(report.text, limit.unit, counter), limit.amount)


def proposals(store: PersonaStore, *, scan: bool = False) -> list[Proposal]:
    """The open proposals; ``scan`` first proposes what no single write saw (:meth:`PersonaStore.proposals`)."""
    return store.proposals(scan=scan)


def history(store: PersonaStore, persona_id: int) -> list[Link]:
    return store.history(persona_id)
