"""Which profiles a tick may have work for, in one query over the whole database.

`persona tick --all-profiles` used to visit every profile: a lock and seven
queries each, so 10,000 profiles with nothing to do cost 30 s of a worker, and
every worker repeated the whole walk. This query asks the same questions as
the triggers (``triggers.evaluate``) and retention (``retention.plan_retention``)
of every profile at once, so only the profiles it names are visited.

It is the one query that runs outside :mod:`pipeline.store` (the layering test names it): it asks of every
profile's tables at once what the schedule asks of one profile's through the store.

It may name too many, never too few: the visit decides, from the same state,
exactly as before. So every comparison leans towards "due" at its boundary
(floating-point rounding must not hide a due fact), and a condition it cannot
ask of the database (a persona file's existence or readability) makes it
give up and return None: visit them all.
"""

from __future__ import annotations

import logging
from typing import Any

from ..clock import to_db
from ..config.schema import Settings
from ..config.targets import resolve_target
from ..defaults import DEFAULT_CONFIDENCE
from ..errors import InputError
from ..stages.fingerprint import config_hash
from ..store import PersonaStore
from ..store.validation import MAX_PROFILE_CHARS, check_text
from .triggers import daily_slot

log = logging.getLogger(__name__)

MAX_HALVINGS = 1000  # 2^1000 is about 1e301: still a float on both engines
MARGIN = 1e-9  # relative: a fact this close to expiring or decaying away counts as due

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


def due_profiles(settings: Settings, store: PersonaStore) -> list[str] | None:
    """The profiles a tick may render or apply retention to; None when only visiting each can tell."""
    targets = [resolve_target(settings, name) for name in settings.targets]
    if any(not target.in_store for target in targets):
        return None  # cold start and recovery look at files on this host
    conditions, params = _conditions(settings, store, [target.name for target in targets])
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT n.profile FROM ({PROFILES}) AS n LEFT JOIN persona_runs r ON r.id = ("
            "SELECT MAX(x.id) FROM persona_runs x WHERE x.session_id = n.profile AND x.outcome != 'stale') "
            f"WHERE r.id IS NULL OR {' OR '.join(conditions)} ORDER BY 1", params).fetchall()
    return [str(row[0]) for row in rows]


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
    if settings.retention.enabled:
        conditions.append(_retention_due(settings, store))
        params |= _retention_params(settings)
    return conditions, params


def _retention_due(settings: Settings, store: PersonaStore) -> str:
    """A fact of the profile that retention would evict or promote now (see ``retention._judge``)."""
    dialect = store.dialect
    age = f"{dialect.greatest}(COALESCE({dialect.age_days(':now', 'COALESCE(last_reinforced_at, created_at)')}, 0), 0)"
    promote = ("(COALESCE(reinforcement_count, 0) >= :promote_after) OR "
               if settings.retention.promote_after else "")
    return (f"EXISTS (SELECT 1 FROM memoria_persona f WHERE f.session_id = n.profile AND f.tier != 'permanent' "
            f"AND ({store.row_problem()}) IS NULL AND ("
            f"(tier = 'working' AND ({promote}{age} * 24 >= :ttl_hours)) OR "
            f"(tier = 'long_term' AND {_decayed_away(age)})))")


def _decayed_away(age: str) -> str:
    """confidence x 0.5^(age / half-life) < evict_below, without leaving PostgreSQL's float range.

    PostgreSQL raises on a float underflow (0.5^2000, or a tiny confidence times a small power), so
    the comparison is turned around to confidence < evict_below x 2^(age / half-life), and past
    MAX_HALVINGS half-lives (where the decayed confidence is below 1e-300) a fact counts as due.
    """
    halvings = f"({age} / :half_life)"
    return (f"CASE WHEN {halvings} >= {MAX_HALVINGS} THEN TRUE "
            f"ELSE COALESCE(confidence, :confidence) < :evict_below * power(2.0, {halvings}) END")


def _retention_params(settings: Settings) -> dict[str, Any]:
    rules = settings.retention
    return {"promote_after": rules.promote_after, "ttl_hours": rules.working_ttl_hours * (1 - MARGIN),
            "half_life": rules.half_life_days, "evict_below": rules.evict_below * (1 + MARGIN),
            "confidence": DEFAULT_CONFIDENCE}
