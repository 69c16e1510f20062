"""`persona tick`: apply retention, then render every target if any trigger fires.

Ticks of one profile serialize on its tick lock, and every decision is made
from database state inside the lock, so a tick right after another, or racing
it, finds nothing left to do.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from ..clock import Clock, to_db, utc_now
from ..config.schema import Settings
from ..config.targets import profile_targets
from ..errors import PersonaError, StoreError, StoreUnavailable
from ..stages.fingerprint import config_hash
from ..store import PersonaStore
from ..store.backend import Connection
from ..store.blocks import existing_blocks
from ..store.runs import LastRun, last_run
from ..store.snapshots import prune_snapshots
from ..store.tick_state import AskedState
from .due import all_profiles, survey
from .retention import RetentionAction, apply_retention
from .triggers import TriggerState, ask_on, evaluate

if TYPE_CHECKING:  # the render pipeline loads when a tick renders: a prompt that finds nothing new never needs it
    from ..render.model import TargetReport

TICK_LOCK_TIMEOUT_S = 120.0

log = logging.getLogger(__name__)


@dataclass
class TickResult:
    """What one tick did."""

    rendered: bool
    reason: str
    triggers: list[TriggerState]
    retention: list[RetentionAction] = field(default_factory=list)
    reports: list[TargetReport] = field(default_factory=list)
    pruned_snapshots: int = 0  # session snapshots older than store.keep_snapshot_days, deleted by this tick
    skipped: list[str] = field(default_factory=list)  # a warning per target the profile has no file in

    def to_dict(self) -> dict[str, Any]:
        return {
            "rendered": self.rendered,
            "reason": self.reason,
            "triggers": [t.to_dict() for t in self.triggers],
            "retention": [a.to_dict() for a in self.retention],
            "reports": [r.to_dict() for r in self.reports],
            "pruned_snapshots": self.pruned_snapshots,
            "skipped": self.skipped,
        }


def tick(settings: Settings, *, store: PersonaStore, force: bool = False,
         wait_s: float = TICK_LOCK_TIMEOUT_S) -> TickResult:
    """Retention, then triggers, then (if any fired) a render of every target, under the profile's tick lock.

    On SQLite the lock is a file beside the database; on PostgreSQL, a lock of
    the profile's on the server, released if the worker dies or stops
    answering (``store.lock_lease_ms``). Another tick holding it for
    ``wait_s`` is a StoreError; a prompt's cold start passes 0.
    """
    store.open()  # a bad path fails before the lock file is made
    with store.profile_lock_asking(wait_s, lambda conn: Asked.on(conn, settings, store)) as asked:
        if asked is None:
            raise StoreError(f"another persona tick on {store.label} is rendering profile {store.profile!r}"
                             + (f" and held its lock for {wait_s:g} s" if wait_s else " now"))
        return _tick_locked(settings, store, force, asked)


def render_due(settings: Settings, store: PersonaStore) -> TickResult | None:
    """For a host about to build or refresh a prompt: render every target whose triggers fire, if the profile's
    lock is free right now; None when it is not, or the render failed (the last good text is then served).

    The same triggers and lock as ``persona tick``, with a wait of 0: a prompt never queues behind a worker.
    What a prompt needs is the store's changes, and what the hosts' models saved in their own memory since
    (:func:`.learn.learn_due`): when nothing changed since the last render (the profile's change counter, the
    settings' fingerprint, every target still there), a few indexed reads answer and no tick runs. Time-driven
    work (decay, expiry, the daily render) stays with ``persona tick``.
    """
    try:
        last = last_run(store)
        # A hand-written persona file beside an empty store is the user's, and never rendered over.
        if last is None and not any(store.count_by_tier().values()):
            return None
        from .learn import learn_due  # the import engine loads only where a prompt is built

        learn_due(settings, store)  # what a host's model saved since is rendered with the rest
        if last is not None and _rendered_as_is(settings, store, last):
            return TickResult(False, "nothing changed since the last render", [])
        return tick(settings, store=store, wait_s=0)
    except PersonaError as error:
        log.debug("profile %s: no render before the prompt (%s); serving the last good text", store.profile, error)
        return None


def _rendered_as_is(settings: Settings, store: PersonaStore, last: LastRun) -> bool:
    """Whether the last render stands: same store generation, same settings, and every target still present."""
    if last.generation != store.generation() or last.config_hash != config_hash(settings):
        return False
    targets, _ = profile_targets(settings, store.profile)
    in_store = [target.name for target in targets if target.in_store]
    files_there = all(target.path.exists() for target in targets if not target.in_store)
    return files_there and set(in_store) <= set(existing_blocks(store, in_store))


@dataclass(frozen=True, slots=True)
class Asked:
    """What a tick asks first, sent in its lock's round trip on a server: the triggers' and retention's question
    (:func:`.triggers.ask`) at the snapshots' cut-off ``before``."""

    before: str | None
    question: AskedState

    @classmethod
    def on(cls, conn: Connection, settings: Settings, store: PersonaStore, *, render: bool = False) -> Asked:
        """Asked on ``conn``; with ``render`` (a sweep visits only profiles the survey found due), the render's
        read too, on a server (:meth:`PersonaStore.read_ahead`: dropped if retention writes first)."""
        before = idle_cutoff(store, settings.store.keep_snapshot_days)
        question = ask_on(conn, settings, store, retention=settings.retention, snapshots_before=before)
        if render and store.backend.features.round_trips:
            store.read_ahead(conn, store.now())
        return cls(before, question)


def _tick_locked(settings: Settings, store: PersonaStore, force: bool, first: Asked) -> TickResult:
    before = first.before
    asked = first.question.answer()
    # Retention acts only where the question says a fact may be due (it never misses one), pruning only
    # where an idle snapshot exists; either write sends the triggers back to the database for what is now.
    evicted = apply_retention(store, settings.retention) if asked.retention_due else []
    keep_days = settings.store.keep_snapshot_days
    pruned = prune_idle_snapshots(store, keep_days, before=before) if asked.idle_snapshots else 0
    states = evaluate(settings, store, force=force, state=None if evicted or pruned else asked)
    fired = [state for state in states if state.fired]
    if not fired:
        return TickResult(False, "no trigger fired", states, evicted, pruned_snapshots=pruned)
    reason = "; ".join(f"{state.name}: {state.reason}" for state in fired)
    from ..stages.runner import run_pipeline

    # A profile other than store.profile renders the targets it has a file in; a fixed file is the owner's alone.
    targets, skipped = profile_targets(settings, store.profile)
    warnings = [found.warning() for found in skipped]
    if warnings:
        log.info("profile %s: %s", store.profile, "; ".join(warnings))
    # One stored target: its write is the tick's last statement, and the lock's release goes in its round trip.
    then = store.held_release if len(targets) == 1 and targets[0].in_store else None
    reports = run_pipeline(settings, store=store, reason=reason, resolved=targets, then=then) if targets else []
    return TickResult(bool(reports), reason, states, evicted, reports, pruned, warnings)


def idle_cutoff(store: PersonaStore, keep_days: int) -> str | None:
    """The time before which a session snapshot unused is pruned (None: ``keep_days`` 0 keeps them all)."""
    return to_db(store.clock() - timedelta(days=keep_days)) if keep_days > 0 else None


def prune_idle_snapshots(store: PersonaStore, keep_days: int, *, before: str | None = None) -> int:
    """Delete the profile's session snapshots no session used for ``keep_days`` days (0 keeps them all);
    ``before``: the cut-off :func:`idle_cutoff` gave, if already taken."""
    before = before or idle_cutoff(store, keep_days)
    if before is None:
        return 0
    pruned = prune_snapshots(store, before=before)
    if pruned:
        log.info("profile %s: pruned %d session snapshots unused for %d days", store.profile, pruned, keep_days)
    return pruned


class Warmup:
    """A sweep's one-off costs of its first render (the render pipeline's modules, the token counter's vocabulary:
    0.5-1 s for o200k_base), paid on a thread while the server works out which profiles retention may act on,
    once the survey has named a profile to render. Whatever fails here fails again, and is reported, where the
    render meets it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._thread: threading.Thread | None = None

    def start(self, due: list[str]) -> None:
        if due and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="persona-warmup", daemon=True)
            self._thread.start()

    def join(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        try:
            from ..render.tokens import get_counter
            from ..stages.runner import kept_plan

            kept_plan(self._settings)  # the render finds it made
            get_counter(self._settings.cap.counter)
        except Exception:  # the render meets it again, and reports it
            log.debug("warming up the render failed", exc_info=True)


@dataclass
class ProfileTick:
    """What `tick --all-profiles` did for one profile."""

    profile: str
    outcome: Literal["rendered", "nothing to do", "up to date", "busy", "failed"]
    result: TickResult | None = None
    error: str | None = None
    attempts: int = 1
    unreachable: bool = False  # failed because the server could not be reached, retries included

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "outcome": self.outcome, "attempts": self.attempts, "error": self.error,
                "result": self.result.to_dict() if self.result else None}


RETRIES = 3  # a lost connection (a server restart) is retried this many times per profile
RETRY_PAUSE_S = 0.5


def tick_all(settings: Settings, *, force: bool = False, clock: Clock = utc_now) -> list[ProfileTick]:
    """Tick every profile once, sharing the work with any other worker doing the same.

    A profile another worker is ticking is skipped ("busy"): its lock is held
    for as long as that tick runs, so no profile is rendered twice at once,
    and whatever changed is rendered by whoever holds it. Only the profiles
    one query finds due are visited (``due.survey``); the rest are
    reported "up to date". Workers start at a random profile, so several
    spread over the list instead of queueing at its head. A lost connection
    is retried; a worker killed mid-render releases its lock with its
    connection, and the profile's next tick finds the change still unrendered.
    A server still unreachable after a profile's retries fails the rest of
    the sweep at once, unvisited, so a frozen server ends it in bounded time.
    """
    warm = Warmup(settings)
    names, visit = _survey(settings, force, clock, warm.start)
    warm.join()  # the counter is made once: a render must not load a second one beside the thread's
    start = random.randrange(len(visit)) if visit else 0
    ticks = _sweep(settings, visit[start:] + visit[:start], force, clock)
    ticks += [ProfileTick(name, "up to date", attempts=0) for name in sorted(set(names) - set(visit))]
    return ticks


def _sweep(settings: Settings, order: list[str], force: bool, clock: Clock) -> list[ProfileTick]:
    ticks: list[ProfileTick] = []
    for index, name in enumerate(order):
        ticks.append(_tick_profile(settings, name, force, clock))
        if ticks[-1].unreachable:
            why = f"not ticked: the server stopped answering at profile {name!r} ({ticks[-1].error})"
            ticks += [ProfileTick(rest, "failed", error=why, attempts=0) for rest in order[index + 1:]]
            break
    return ticks


def _survey(settings: Settings, force: bool, clock: Clock,
            found: Callable[[list[str]], None]) -> tuple[list[str], list[str]]:
    """Every usable profile, and those to visit; a lost connection is retried as a profile's tick is.
    ``found`` is called once some profile is known to be visited."""
    for attempt in range(1, RETRIES):
        try:
            return _survey_once(settings, force, clock, found)
        except StoreUnavailable:
            time.sleep(RETRY_PAUSE_S * attempt)
    return _survey_once(settings, force, clock, found)


def _survey_once(settings: Settings, force: bool, clock: Clock,
                 found: Callable[[list[str]], None]) -> tuple[list[str], list[str]]:
    with PersonaStore.from_settings(settings, clock=clock) as store:
        if force:
            names = all_profiles(store)
            found(names)
            return names, names
        try:
            names, due = survey(settings, store, found=found)
        except StoreUnavailable:
            raise
        except StoreError as error:
            # A row the query cannot read (another tool's odd value) must not stop every profile's tick:
            # visit them all, and let that row fail only its own profile.
            log.warning("could not ask which profiles are due (%s); visiting every profile", error)
            names, due = all_profiles(store), None
    if due is None:
        found(names)
        return names, names
    usable = set(names)  # the due profiles are not judged by name; every profile's names were
    return names, [name for name in due if name in usable]


def _tick_profile(settings: Settings, profile: str, force: bool, clock: Clock) -> ProfileTick:
    error: PersonaError | None = None
    for attempt in range(1, RETRIES + 1):
        try:
            with PersonaStore.from_settings(settings, profile=profile, clock=clock) as store, \
                    store.profile_lock_asking(0, lambda conn: Asked.on(conn, settings, store, render=True)) as asked:
                if asked is None:
                    return ProfileTick(profile, "busy", attempts=attempt)
                with store.read():  # one borrowed connection for the whole tick, not one per query
                    result = _tick_locked(settings, store, force, asked)
                return ProfileTick(profile, "rendered" if result.rendered else "nothing to do", result,
                                   attempts=attempt)
        except StoreUnavailable as lost:
            error = lost
            time.sleep(RETRY_PAUSE_S * attempt)
        except PersonaError as failed:
            return ProfileTick(profile, "failed", error=str(failed), attempts=attempt)
        except Exception as unexpected:  # one profile's surprise (a bug, an OS error) must not end the sweep
            log.debug("tick of profile %r failed", profile, exc_info=True)
            return ProfileTick(profile, "failed", error=f"{type(unexpected).__name__}: {unexpected}",
                               attempts=attempt)
    return ProfileTick(profile, "failed", error=str(error), attempts=RETRIES, unreachable=True)


class Regenerator:
    """For hosts: call :meth:`notify_memory_written` after writing memories.

    It only counts in memory until ``triggers.interval`` writes have been
    seen, then checks the database's own interval trigger (and the others)
    with :meth:`maybe_regenerate`. The check is the database's, so several
    processes writing memories still regenerate once.
    """

    def __init__(self, settings: Settings, *, clock: Clock = utc_now) -> None:
        self.settings = settings
        self.clock = clock
        self._pending = 0

    def notify_memory_written(self, count: int = 1) -> TickResult | None:
        """Count new memories; returns the tick's result when the interval was reached, else None."""
        self._pending += count
        if self._pending < self.settings.triggers.interval:
            return None
        self._pending = 0
        return self.maybe_regenerate()

    def maybe_regenerate(self, *, force: bool = False) -> TickResult:
        """Run a tick now: render only if a trigger fires."""
        with PersonaStore.from_settings(self.settings, clock=self.clock) as store:
            return tick(self.settings, store=store, force=force)
