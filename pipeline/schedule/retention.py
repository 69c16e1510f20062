"""Tiers that mean retention: permanent never decays, long_term decays, working expires.

Eviction leaves the same tombstone as demote (reason ``evicted: <why>``) and
is sticky in the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..clock import to_db
from ..config.schema import RetentionSettings
from ..store import PersonaStore
from ..text import counted

Action = Literal["evict", "promote"]


@dataclass(frozen=True, slots=True)
class RetentionAction:
    """One thing retention does (or, in a dry run, would do) to a fact."""

    action: Action
    persona_id: int
    tier: str
    topic: str
    why: str
    effective_confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def effective_confidence(fact_confidence: float, tier: str, age_days: float, rules: RetentionSettings) -> float:
    """long_term decays by half every ``half_life_days``; other tiers keep their confidence."""
    if tier != "long_term" or not rules.enabled:
        return fact_confidence
    return float(fact_confidence * 0.5 ** (max(age_days, 0.0) / rules.half_life_days))


def plan_retention(store: PersonaStore, rules: RetentionSettings) -> list[RetentionAction]:
    """What retention would do now, in persona-id order. Permanent facts never appear."""
    if not rules.enabled:
        return []
    actions = []
    for fact_id, tier, confidence, count, age_days in store.retention_rows(to_db(store.clock())):
        action = _judge(tier, float(confidence), int(count), float(age_days or 0.0), rules)
        if action is not None:
            fact = store.get(fact_id)
            actions.append(RetentionAction(action[0], fact_id, tier, fact.topic, action[1], action[2]))
    return actions


def _judge(tier: str, confidence: float, count: int, age_days: float, rules: RetentionSettings
           ) -> tuple[Action, str, float] | None:
    """(action, why, effective confidence) for one fact, or None."""
    if tier == "working":
        if rules.promote_after and count >= rules.promote_after:
            return "promote", f"reinforced {counted(count, 'time')} (promote_after {rules.promote_after})", confidence
        hours = age_days * 24
        if hours >= rules.working_ttl_hours:
            why = f"working fact expired: {hours:.1f} h since last reinforcement (ttl {rules.working_ttl_hours:g} h)"
            return "evict", why, confidence
    elif tier == "long_term":
        effective = effective_confidence(confidence, tier, age_days, rules)
        if effective < rules.evict_below:
            why = (f"effective confidence {effective:.4f} < {rules.evict_below:g} (confidence {confidence:g}, "
                   f"{age_days:.1f} days since last reinforcement, half-life {rules.half_life_days:g} days)")
            return "evict", why, effective
    return None


def apply_retention(store: PersonaStore, rules: RetentionSettings, *, dry_run: bool = False) -> list[RetentionAction]:
    """Evict and promote, in one transaction; with ``dry_run``, only say what would happen.

    What to do is decided inside the transaction that does it: a plan read
    before it may be stale (another host reinforced the fact meanwhile), so a
    plan read outside only says whether a transaction is worth taking, and the
    one that acts is read again under the write lock. A no-op pass stays a
    read.

    A promoted fact keeps its age, so it is judged again as long_term in the same transaction:
    an old fact promoted now may also have decayed away, and one pass settles it.
    """
    planned = plan_retention(store, rules)
    if dry_run or not planned:
        return planned
    with store.transaction() as conn:
        actions = plan_retention(store, rules)  # under the write lock: what is true now
        _apply(store, conn, actions)
        if any(action.action == "promote" for action in actions):
            again = plan_retention(store, rules)  # only promoted facts can have changed their verdict
            _apply(store, conn, again)
            actions += again
    return actions


def _apply(store: PersonaStore, conn: Any, actions: list[RetentionAction]) -> None:
    for action in actions:
        if action.action == "evict":
            store.bury(conn, store.get(action.persona_id), f"evicted: {action.why}")
        else:
            store.set_tier(conn, action.persona_id, "long_term")
