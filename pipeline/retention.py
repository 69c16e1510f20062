"""Tiers that mean retention: permanent never decays, long_term decays, working expires.

Eviction leaves the same tombstone as demote (reason ``evicted: <why>``) and
is sticky in the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .clock import from_db
from .settings import RetentionSettings
from .store import Fact, PersonaStore


@dataclass(frozen=True, slots=True)
class RetentionAction:
    """One thing retention does (or, in a dry run, would do) to a fact."""

    action: str  # "evict" or "promote"
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
    return fact_confidence * 0.5 ** (max(age_days, 0.0) / rules.half_life_days)


def plan_retention(store: PersonaStore, rules: RetentionSettings) -> list[RetentionAction]:
    """What retention would do now, in persona-id order. Permanent facts never appear."""
    if not rules.enabled:
        return []
    now = store.clock()
    actions = []
    for fact in store.list():
        age_days = (now - from_db(fact.last_reinforced_at)).total_seconds() / 86400
        action = _judge(fact, age_days, rules)
        if action is not None:
            actions.append(action)
    return sorted(actions, key=lambda a: a.persona_id)


def _judge(fact: Fact, age_days: float, rules: RetentionSettings) -> RetentionAction | None:
    if fact.tier == "working":
        if rules.promote_after and fact.reinforcement_count >= rules.promote_after:
            why = f"reinforced {fact.reinforcement_count} times (promote_after {rules.promote_after})"
            return RetentionAction("promote", fact.id, fact.tier, fact.topic, why, fact.confidence)
        hours = age_days * 24
        if hours >= rules.working_ttl_hours:
            why = f"working fact expired: {hours:.1f} h since last reinforcement (ttl {rules.working_ttl_hours:g} h)"
            return RetentionAction("evict", fact.id, fact.tier, fact.topic, why, fact.confidence)
    elif fact.tier == "long_term":
        effective = effective_confidence(fact.confidence, fact.tier, age_days, rules)
        if effective < rules.evict_below:
            why = (f"effective confidence {effective:.4f} < {rules.evict_below:g} (confidence {fact.confidence:g}, "
                   f"{age_days:.1f} days since last reinforcement, half-life {rules.half_life_days:g} days)")
            return RetentionAction("evict", fact.id, fact.tier, fact.topic, why, effective)
    return None


def apply_retention(store: PersonaStore, rules: RetentionSettings, *, dry_run: bool = False) -> list[RetentionAction]:
    """Evict and promote, in one transaction; with ``dry_run``, only say what would happen."""
    actions = plan_retention(store, rules)
    if dry_run or not actions:
        return actions
    with store.transaction() as conn:
        for action in actions:
            if action.action == "evict":
                store.bury(conn, store.get(action.persona_id), f"evicted: {action.why}")
            else:
                conn.execute("UPDATE memoria_persona SET tier = 'long_term' WHERE id = ?", (action.persona_id,))
                store.touch(conn)
    return actions
