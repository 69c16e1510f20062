"""When to regenerate: seven conditions, each evaluated from state kept in the database.

The last non-stale run in ``persona_runs`` is the reference point: its store
generation, its working-memory watermark, its time and its config hash.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import inputs
from ..clock import from_db
from ..config.load_sets import waiting_for
from ..config.targets import ResolvedTarget, profile_targets, region_id
from ..errors import PersonaError
from ..fs.read import describe, probe_regular
from ..fs.region_file import current_region, region_path
from ..stages.fingerprint import config_hash
from ..store import PersonaStore
from ..store.backend import Connection
from ..store.runs import LastRun, last_render, last_run
from ..store.tick_state import AskedState, TickState, ask_tick_state, tick_state
from ..text import counted

if TYPE_CHECKING:
    from ..config.schema import RetentionSettings, Settings

EMPTY_SHA = hashlib.sha256(b"").hexdigest()


@dataclass(frozen=True, slots=True)
class TriggerState:
    """One condition: whether it is switched on, whether it fires, and why."""

    name: str
    enabled: bool
    fired: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        # asdict copies each field through its recursive walk: 9 µs against 0.2, seven times per profile swept
        return {"name": self.name, "enabled": self.enabled, "fired": self.fired, "reason": self.reason}


def ask(settings: Settings, store: PersonaStore, *, retention: RetentionSettings | None = None,
        snapshots_before: str | None = None) -> TickState:
    """What the triggers read of the profile, in one statement; with ``retention`` and ``snapshots_before``,
    whether retention or snapshot pruning may have work too (see :func:`..store.tick_state.tick_state`)."""
    return tick_state(store, targets=_in_store(_targets(settings, store)), at_most=settings.triggers.interval,
                      retention=retention, snapshots_before=snapshots_before)


def ask_on(conn: Connection, settings: Settings, store: PersonaStore, *, retention: RetentionSettings | None = None,
           snapshots_before: str | None = None) -> AskedState:
    """:func:`ask`'s statement on ``conn``, unread: sent with the lock's (``PersonaStore.profile_lock_asking``)."""
    return ask_tick_state(conn, store, targets=_in_store(_targets(settings, store)),
                          at_most=settings.triggers.interval, retention=retention, snapshots_before=snapshots_before)


def _targets(settings: Settings, store: PersonaStore) -> list[ResolvedTarget]:
    """The profile's targets (a fixed file of another profile's is not this one's), but those waiting while the
    host reads another file of the user's (OpenCode's): a render leaves their file absent, so no trigger waits
    for it."""
    home = Path(inputs.home())
    return [target for target in profile_targets(settings, store.profile)[0] if waiting_for(target.path, home) is None]


def _in_store(targets: list[ResolvedTarget]) -> list[str]:
    return [target.name for target in targets if target.in_store]


def evaluate(settings: Settings, store: PersonaStore, *, force: bool = False,
             state: TickState | None = None) -> list[TriggerState]:
    """Every trigger's state, in a fixed order; ``state``: what :func:`ask` found, if nothing changed since."""
    rules = settings.triggers
    now = store.clock()
    targets = _targets(settings, store)
    paths = [target.path for target in targets if not target.in_store]
    in_store = _in_store(targets)
    if state is None:
        state = tick_state(store, targets=in_store, at_most=rules.interval)
    last = state.last
    regions = [target for target in targets if target.output == "region"]
    # Each region's file is read once, for both triggers that look at it.
    states = {t: _region_state(t, settings.render.max_region_file_bytes) for t in regions if t.path.exists()}
    return [
        TriggerState("explicit", rules.explicit, rules.explicit and force,
                     "--force was given" if force else "no --force"),
        _cold_start(rules.cold_start, paths, state.blocks, in_store, states),
        _recovery(rules.recovery, [p for p in paths if p not in {t.path for t in regions}], store, states),
        _interval(rules.on_interval, rules.interval, state.new_memories, last),
        _daily(rules.daily_sync, rules.daily_sync_hour, now, last),
        _store_changed(rules.store_changed, state.generation, last),
        _config_changed(rules.config_changed, settings, last),
    ]


def _cold_start(enabled: bool, paths: list[Path], have: frozenset[str], in_store: list[str],
                regions: dict[ResolvedTarget, str]) -> TriggerState:
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    missing += [f"{t.path} (its region)" for t, state in regions.items() if state == "missing"]
    missing += [f"the store (target {name!r})" for name in in_store if name not in have]
    kinds = " and ".join(kind for kind, some in (("persona file", paths), ("stored block", in_store)) if some)
    reason = f"no persona file at {', '.join(missing)}" if missing else f"every {kinds or 'persona file'} exists"
    return TriggerState("cold_start", enabled, enabled and bool(missing), reason)


def _region_state(target: ResolvedTarget, max_bytes: int) -> str:
    """"missing", "present", or why the region cannot be read (broken markers, an unreadable file)."""
    try:
        found = current_region(region_path(target.path), region_id(target), max_bytes)
        return "missing" if found is None else "present"
    except PersonaError as error:
        return str(error)


def _recovery(enabled: bool, paths: list[Path], store: PersonaStore,
              regions: dict[ResolvedTarget, str]) -> TriggerState:
    problems = [state for state in regions.values() if state not in ("missing", "present")]
    for path in paths:
        if not path.exists():
            continue  # that is cold start
        try:
            size = probe_regular(path)  # the injector's own opener: a FIFO must not hang status or tick
        except OSError as error:
            problems.append(f"{path} is unreadable (it {describe(error)})")
            continue
        last = last_render(store, path)
        if last is not None and last[1] != store.profile:
            problems.append(f"{path} was last rendered for profile {last[1]!r}")
        elif not size and last is not None and last[0] != EMPTY_SHA:
            problems.append(f"{path} is empty but its last render was not")
    reason = "; ".join(problems) if problems else ("every persona file is readable" if paths
                                                    else "no persona file to read (every target is stored)")
    return TriggerState("recovery", enabled, enabled and bool(problems), reason)


def _interval(enabled: bool, interval: int, new: int, last: LastRun | None) -> TriggerState:
    fired = enabled and new >= interval
    shown = f"{new}+" if new >= interval else str(new)
    noun = "memory" if shown == "1" else "memories"
    return TriggerState("interval", enabled, fired,
                        f"{shown} new working {noun} since the last render (interval {interval})")


def daily_slot(now: datetime, hour: int) -> datetime:
    """The most recent daily sync moment at or before ``now``."""
    slot = now.replace(hour=hour, minute=0, second=0, microsecond=0)
    return slot if slot <= now else slot - timedelta(days=1)


def _daily(enabled: bool, hour: int, now: datetime, last: LastRun | None) -> TriggerState:
    if not 0 <= hour <= 23:
        return TriggerState("daily_sync", False, False, f"daily_sync_hour {hour} is outside 0-23: off")
    slot = daily_slot(now, hour)
    inputs.note_deadline((slot + timedelta(days=1)).timestamp())  # what status says of it stands until then
    due = last is None or from_db(last.run_at) < slot
    reason = (f"no render since {slot:%Y-%m-%d %H:%M} UTC" if due
              else f"rendered since {slot:%Y-%m-%d %H:%M} UTC")
    return TriggerState("daily_sync", enabled, enabled and due, reason)


def _store_changed(enabled: bool, generation: int, last: LastRun | None) -> TriggerState:
    rendered = last.generation if last else None
    # A counter below the last render's was reset (another tool erased the profile's state): changed too.
    changed = rendered is None or generation != rendered
    if rendered is None:
        reason = "never rendered"
    elif generation < rendered:
        reason = "the profile's change counter was reset since the last render"
    elif changed:
        reason = f"{counted(generation - rendered, 'store change')} since the last render"
    else:
        reason = "no store change since the last render"
    return TriggerState("store_changed", enabled, enabled and changed, reason)


def _config_changed(enabled: bool, settings: Settings, last: LastRun | None) -> TriggerState:
    if last is None or last.config_hash is None:
        return TriggerState("config_changed", enabled, False, "no earlier render to compare with")
    changed = config_hash(settings) != last.config_hash
    reason = "settings or templates changed since the last render" if changed else "settings and templates unchanged"
    return TriggerState("config_changed", enabled, enabled and changed, reason)


def status_data(settings: Settings, store: PersonaStore) -> dict[str, Any]:
    """What `persona status` shows: trigger states, the last run, fact counts per tier, the store generation, and
    the open proposals (``supersede_flags``, their pairs of ids, is the deprecated name of the same list)."""
    last = last_run(store)
    proposals = store.proposals()
    return {
        "triggers": [t.to_dict() for t in evaluate(settings, store)],
        "last_run": None if last is None else {"run_at": last.run_at, "generation": last.generation,
                                               "memory_watermark": last.memory_watermark},
        "facts": store.count_by_tier(),
        "generation": store.generation(),
        "proposals": [proposal.to_dict() for proposal in proposals],
        "supersede_flags": [{"old": proposal.old.id, "new": proposal.new.id, "flagged_at": proposal.proposed_at}
                            for proposal in proposals],
    }
