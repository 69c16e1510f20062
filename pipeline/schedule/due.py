"""Which profiles a tick may have work for, in two statements over the whole database (the first also names
every profile).

`persona tick --all-profiles` used to visit every profile: a lock and seven
queries each, so 10,000 profiles with nothing to do cost 30 s of a worker, and
every worker repeated the whole walk. Two statements ask the same questions as
the triggers (``triggers.evaluate``) and retention (``retention.plan_retention``)
of every profile at once, so only the profiles they name are visited.

It is the one place SQL runs outside :mod:`pipeline.store` (the layering test names it): it asks of every
profile's tables at once what the schedule asks of one profile's through the store.

It may name too many, never too few: the visit decides, from the same state,
exactly as before. So every comparison leans towards "due" at its boundary
(floating-point rounding must not hide a due fact), and a condition it cannot
ask of the database (a persona file's existence or readability) makes it
give up and return None: visit them all.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..clock import to_db
from ..config.schema import Settings
from ..config.targets import resolve_target
from ..errors import InputError
from ..stages.fingerprint import config_hash
from ..store import PersonaStore
from ..store.retention_due import profiles_due, retention_params
from ..store.validation import MAX_PROFILE_CHARS, check_text
from .triggers import daily_slot

log = logging.getLogger(__name__)

PROFILES = ("SELECT session_id AS profile FROM memoria_persona WHERE session_id IS NOT NULL "
            "UNION SELECT session_id FROM persona_state UNION SELECT profile FROM persona_blocks")


def all_profiles(store: PersonaStore) -> list[str]:
    """Every profile the database knows: any with facts, a change counter or a block."""
    with store.read() as conn:
        return usable([str(row[0]) for row in conn.execute(f"{PROFILES} ORDER BY 1")])


def usable(names: list[str]) -> list[str]:
    """The names a profile can have. Another tool may have written an empty, blank or over-long
    session_id: such rows are left alone with one warning, rather than failing every tick (or, for an
    empty one, being ticked as the default profile)."""
    kept, refused = [], []
    for name in names:
        try:
            check_text("profile", name, MAX_PROFILE_CHARS)
        except InputError:
            refused.append(name)
        else:
            kept.append(name)
    if refused:
        shown = ", ".join(repr(name[:40]) for name in refused[:3])
        log.warning("skipping %d profile(s) whose session_id cannot be a profile (empty, blank, a NUL byte or over "
                    "%d characters): %s", len(refused), MAX_PROFILE_CHARS, shown)
    return kept


def due_profiles(settings: Settings, store: PersonaStore, *,
                 found: Callable[[list[str]], None] | None = None) -> list[str] | None:
    """The profiles a tick may render or apply retention to; None when only visiting each can tell."""
    return survey(settings, store, found=found)[1]


def survey(settings: Settings, store: PersonaStore, *,
           found: Callable[[list[str]], None] | None = None) -> tuple[list[str], list[str] | None]:
    """Every profile the database knows (:func:`all_profiles`), and those a tick may render or apply retention
    to (None when only visiting each can tell).

    Two statements: every profile with whether a trigger fires for it (index look-ups per profile), then those
    retention may act on (a pass over every fact, most of the survey's time). ``found`` is given the first
    answer's due profiles as soon as it is read, so a worker can prepare its renders while the server makes
    the second.
    """
    targets = [resolve_target(settings, name) for name in settings.targets]
    if any(not target.in_store for target in targets):
        return all_profiles(store), None  # cold start and recovery look at files on this host
    conditions, params = _conditions(settings, store, [target.name for target in targets])
    with store.read() as conn:
        rows = [(str(row[0]), bool(row[1])) for row in conn.execute(
            f"SELECT n.profile, r.id IS NULL OR {' OR '.join(conditions)} FROM ({PROFILES}) AS n LEFT JOIN "
            "persona_runs r ON r.id = (SELECT MAX(x.id) FROM persona_runs x WHERE x.session_id = n.profile AND "
            "x.outcome != 'stale') ORDER BY 1", params)]
        due = [name for name, fires in rows if fires]
        if found is not None and due:
            found(due)
        if not settings.retention.enabled:
            return usable([name for name, _ in rows]), due
        kept = [str(row[0]) for row in conn.execute(
            f"SELECT DISTINCT session_id FROM ({profiles_due(settings.retention, store)}) AS kept",
            retention_params(settings.retention) | {"now": params["now"]})]
    return usable([name for name, _ in rows]), due + sorted(set(kept) - set(due))


def _conditions(settings: Settings, store: PersonaStore, in_store: list[str]) -> tuple[list[str], dict[str, Any]]:
    """SQL conditions on profile ``n.profile`` and its last run ``r`` (never NULL here), one per trigger."""
    rules, now = settings.triggers, store.clock()
    conditions, params = ["FALSE"], {"now": to_db(now)}
    if rules.cold_start and in_store:
        conditions.append(f"(SELECT COUNT(*) FROM persona_blocks b WHERE b.profile = n.profile AND b.target IN "
                          f"({', '.join(f':target{k}' for k in range(len(in_store)))})) < {len(in_store)}")
        params |= {f"target{k}": name for k, name in enumerate(in_store)}
    if rules.on_interval:
        mine = "w.session_id = n.profile AND " if store.memory_scope == "profile" else ""
        conditions.append(f"EXISTS (SELECT 1 FROM working_memory w WHERE {mine}w.rowid > r.memory_watermark "
                          f"ORDER BY w.rowid LIMIT 1 OFFSET {int(rules.interval) - 1})")
    if rules.daily_sync and 0 <= rules.daily_sync_hour <= 23:
        # Text order is time order for our own format only: any other text is left to the visit to judge.
        conditions.append("(r.run_at < :slot OR length(r.run_at) != 19 OR substr(r.run_at, 11, 1) != ' ')")
        params["slot"] = to_db(daily_slot(now, rules.daily_sync_hour))
    if rules.store_changed:
        conditions.append("COALESCE((SELECT s.generation FROM persona_state s WHERE s.session_id = n.profile), 0) "
                          "<> r.generation")
    if rules.config_changed:
        conditions.append("(r.config_hash IS NOT NULL AND r.config_hash != :config)")
        params["config"] = config_hash(settings)
    return conditions, params
