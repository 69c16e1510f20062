"""`persona tick`: apply retention, then render every target if any trigger fires.

Ticks serialize on a lock file beside the database, and every decision is
made from database state inside the lock, so a tick right after another, or
racing it, finds nothing left to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from .atomic import PRIVATE_FILE
from .clock import Clock, utc_now
from .errors import StoreError
from .model import TargetReport
from .retention import RetentionAction, apply_retention
from .runner import run_pipeline
from .settings import Settings
from .store import PersonaStore
from .triggers import TriggerState, evaluate

TICK_LOCK_TIMEOUT_S = 120.0


@dataclass
class TickResult:
    """What one tick did."""

    rendered: bool
    reason: str
    triggers: list[TriggerState]
    retention: list[RetentionAction] = field(default_factory=list)
    reports: list[TargetReport] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rendered": self.rendered,
            "reason": self.reason,
            "triggers": [t.to_dict() for t in self.triggers],
            "retention": [a.to_dict() for a in self.retention],
            "reports": [r.to_dict() for r in self.reports],
        }


def tick_lock(store: PersonaStore) -> FileLock:
    """The lock every tick on this database takes."""
    return FileLock(Path(f"{store.path}.persona-tick.lock"), timeout=TICK_LOCK_TIMEOUT_S, mode=PRIVATE_FILE)


def tick(settings: Settings, *, store: PersonaStore, force: bool = False) -> TickResult:
    """Retention, then triggers, then (if any fired) a render of every target, under the tick lock."""
    store.open()  # a bad path fails before the lock file is made
    try:
        with tick_lock(store):
            return _tick_locked(settings, store, force)
    except Timeout:
        raise StoreError(f"another persona tick on {store.path} held the lock for {TICK_LOCK_TIMEOUT_S:g} s") \
            from None


def _tick_locked(settings: Settings, store: PersonaStore, force: bool) -> TickResult:
    evicted = apply_retention(store, settings.retention)
    states = evaluate(settings, store, force=force)
    fired = [state for state in states if state.fired]
    if not fired:
        return TickResult(False, "no trigger fired", states, evicted)
    reason = "; ".join(f"{state.name}: {state.reason}" for state in fired)
    reports = run_pipeline(settings, store=store, reason=reason)
    return TickResult(True, reason, states, evicted, reports)


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
