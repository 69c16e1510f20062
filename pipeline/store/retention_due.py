"""SQL for "retention would evict or promote one of this profile's facts now", asked of one profile (a tick's
questions) or of every profile at once (the due survey), the same way as ``schedule.retention`` judges a fact.

It may say "due" for too many, never too few: every comparison leans towards "due" at its boundary (floating-point
rounding must not hide a due fact), so a "not due" lets a tick skip reading the facts to judge them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..defaults import DEFAULT_CONFIDENCE
from .database import Database

if TYPE_CHECKING:  # the rules' type only: `persona status` runs without pydantic
    from ..config.schema import RetentionSettings

MAX_HALVINGS = 1000  # 2^1000 is about 1e301: still a float on both engines
MARGIN = 1e-9  # relative: a fact this close to expiring or decaying away counts as due


def retention_due(rules: RetentionSettings, store: Database, profile: str) -> str:
    """An EXISTS over the facts of the profile named by the SQL expression ``profile`` (see ``retention._judge``)."""
    judged = _judged(rules, store, f"f.session_id = {profile}")
    return f"EXISTS (SELECT 1 FROM ({judged}) AS judged WHERE {_due(rules)})"


def profiles_due(rules: RetentionSettings, store: Database) -> str:
    """A subquery of every profile with a fact :func:`retention_due` finds, judged in one pass over the facts
    (for the due survey: ``profile IN (...)`` is worked out once, an EXISTS per profile would be asked 2,000
    times, each through an index)."""
    return (f"SELECT session_id FROM ({_judged(rules, store, 'f.session_id IS NOT NULL')}) AS judged "
            f"WHERE {_due(rules)}")


def _judged(rules: RetentionSettings, store: Database, which: str) -> str:
    """The facts retention may act on, ``which`` of them, each with its age in days worked out once: in a
    subquery the server keeps apart (PostgreSQL repeats an expression at every place it is written, and
    checking a timestamp's shape is most of the cost: 4 µs a fact with the age written three times, 1.3 once)."""
    dialect = store.dialect
    age = f"{dialect.greatest}(COALESCE({dialect.age_days(':now', 'COALESCE(last_reinforced_at, created_at)')}, 0), 0)"
    return (f"SELECT session_id, tier, confidence, reinforcement_count, {age} AS age FROM memoria_persona f "
            f"WHERE {which} AND f.tier != 'permanent' AND ({store.row_problem()}) IS NULL{dialect.fence}")


def _due(rules: RetentionSettings) -> str:
    promote = "(COALESCE(reinforcement_count, 0) >= :promote_after) OR " if rules.promote_after else ""
    return (f"(tier = 'working' AND ({promote}age * 24 >= :ttl_hours)) OR "
            f"(tier = 'long_term' AND {_decayed_away('age')})")


def _decayed_away(age: str) -> str:
    """confidence x 0.5^(age / half-life) < evict_below, without leaving PostgreSQL's float range.

    PostgreSQL raises on a float underflow (0.5^2000, or a tiny confidence times a small power), so
    the comparison is turned around to confidence < evict_below x 2^(age / half-life), and past
    MAX_HALVINGS half-lives (where the decayed confidence is below 1e-300) a fact counts as due.
    """
    halvings = f"({age} / :half_life)"
    return (f"CASE WHEN {halvings} >= {MAX_HALVINGS} THEN TRUE "
            f"ELSE COALESCE(confidence, :confidence) < :evict_below * power(2.0, {halvings}) END")


def retention_params(rules: RetentionSettings) -> dict[str, Any]:
    """The parameters of :func:`retention_due` but ``:now``."""
    return {"promote_after": rules.promote_after, "ttl_hours": rules.working_ttl_hours * (1 - MARGIN),
            "half_life": rules.half_life_days, "evict_below": rules.evict_below * (1 + MARGIN),
            "confidence": DEFAULT_CONFIDENCE}
