"""rank: score, collapse near-duplicates, group by topic, and order everything totally."""

from __future__ import annotations

import math
from collections import defaultdict

from pydantic import Field

from ..context import StageContext
from ..model import FactSet, LeftOut, PersonaFact, RankedFact, RankedPersona, RankedSection, fact_label
from ..registry import StageOptions, stage
from ..sanitize import dedupe_key
from ..settings import Tier

TIER_RANK = {"permanent": 0, "long_term": 1, "working": 2}


class RankOptions(StageOptions):
    tier_weights: dict[Tier, float] = Field(
        default_factory=lambda: dict[Tier, float]({"permanent": 3.0, "long_term": 2.0, "working": 1.0}),
        description="Score added by each tier.",
    )
    reinforcement_weight: float = Field(0.5, description="Weight of log(1 + reinforcement_count).")
    confidence_weight: float = Field(1.0, description="Weight of confidence (0..1).")
    recency_weight: float = Field(0.5, description="Weight of recency, 1 when just reinforced, halving per half-life.")
    recency_half_life_days: float = Field(30.0, gt=0, description="Days for recency to halve.")
    max_items_per_section: int = Field(12, ge=1, description="Facts kept per topic, so no topic starves the rest.")


@stage("rank", options=RankOptions)
def rank(facts: FactSet, *, ctx: StageContext, options: RankOptions) -> RankedPersona:
    """Score every fact, collapse near-duplicates into the stronger, and group by topic."""
    items = facts.facts
    retention = ctx.settings.retention
    scores = _scores(items, options, retention.half_life_days if retention.enabled else None)
    # A total order: best score, then tier, then reinforcement, then the stable key.
    keys = [(-scores[i], TIER_RANK.get(f.tier, 3), -f.reinforcement_count, f.key) for i, f in enumerate(items)]
    seen: dict[str, str] = {}  # dedupe key -> the stronger fact that kept it
    groups: dict[str, list[RankedFact]] = defaultdict(list)
    omitted: dict[str, int] = defaultdict(int)
    left_out: list[LeftOut] | None = list(facts.left_out) if ctx.explain else None
    limit, duplicates = options.max_items_per_section, 0
    for index in sorted(range(len(items)), key=keys.__getitem__):
        fact = items[index]
        key = dedupe_key(fact.content)
        if key in seen:
            duplicates += 1
            if left_out is not None:
                left_out.append(LeftOut(fact, f"duplicate of {fact_label(seen[key])}", scores[index]))
            continue
        seen[key] = fact.key
        group = groups[fact.topic]
        if len(group) < limit:
            group.append(RankedFact(fact, scores[index]))
        else:
            omitted[fact.topic] += 1
            if left_out is not None:
                left_out.append(LeftOut(fact, "over max_items_per_section", scores[index]))
    # Groups were filled in global rank order, so sections come out ranked by their best fact.
    sections = tuple(RankedSection(topic, tuple(group), omitted[topic]) for topic, group in groups.items())
    return RankedPersona(sections, len(items), duplicates, facts.generation, facts.memory_watermark,
                         tuple(left_out or ()))


def _scores(items: tuple[PersonaFact, ...], options: RankOptions, decay_half_life: float | None) -> list[float]:
    """tier weight + w·log(1 + reinforcements) + w·confidence + w·recency, rounded so float noise never reorders.

    With retention on, a long_term fact's confidence is its effective
    (decayed) confidence, so a decaying fact sinks before it is evicted.
    """
    tiers: dict[str, float] = {str(tier): weight for tier, weight in options.tier_weights.items()}
    reinforcement, confidence = options.reinforcement_weight, options.confidence_weight
    recency, half_life = options.recency_weight, options.recency_half_life_days
    log1p = math.log1p
    return [
        round(
            tiers.get(f.tier, 0.0)
            + reinforcement * log1p(f.reinforcement_count)
            + confidence * f.confidence * _decay(f, decay_half_life)
            + recency * 0.5 ** (f.age_days / half_life),
            9,
        )
        for f in items
    ]


def _decay(fact: PersonaFact, half_life: float | None) -> float:
    if half_life is None or fact.tier != "long_term":
        return 1.0
    return 0.5 ** (fact.age_days / half_life)
