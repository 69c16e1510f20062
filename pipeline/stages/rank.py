"""rank: score, collapse near-duplicates, group by topic, and order everything totally."""

from __future__ import annotations

import math
from collections import defaultdict

from pydantic import Field

from ..render.model import FactSet, LeftOut, PersonaFact, RankedFact, RankedPersona, RankedSection, fact_label
from ..render.prepared import PreparedFacts
from ..tiers import TIER_RANK, Tier
from .context import StageContext
from .registry import StageOptions, stage

LN2 = math.log(2)


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

    def order(index: int) -> tuple[float, int, int, str]:
        # A total order: best score, then tier, then reinforcement, then the stable key.
        fact = items[index]
        return -scores[index], TIER_RANK.get(fact.tier, len(TIER_RANK)), -fact.reinforcement_count, fact.key

    limit = options.max_items_per_section
    if not ctx.explain:
        shortlist, cut = _strongest(items, scores, limit)
        ranked = _walk(items, scores, sorted(shortlist, key=order), limit, facts, cut=cut, explain=False,
                       prepared=ctx.prepared)
        if ranked is not None:
            return ranked
    # Explaining (every fact needs its fate), or duplicates emptied a topic's shortlist: rank everything.
    ranked = _walk(items, scores, sorted(range(len(items)), key=order), limit, facts, cut={}, explain=ctx.explain,
                   prepared=ctx.prepared)
    assert ranked is not None
    return ranked


def _strongest(items: tuple[PersonaFact, ...], scores: list[float], limit: int) -> tuple[list[int], dict[str, int]]:
    """Each topic's strongest facts, twice as many as can be kept (ties at the edge included).

    Only these can reach the persona, so the total order is built for a few
    per topic rather than for every fact: at 100k facts that was most of
    rank's time. Returns the shortlist and, for each topic cut short, how
    many of its facts were left off it.
    """
    by_topic: dict[str, list[int]] = defaultdict(list)
    for index, fact in enumerate(items):
        by_topic[fact.topic].append(index)
    shortlist: list[int] = []
    cut: dict[str, int] = {}
    keep = 2 * limit
    negated = [-score for score in scores]
    for topic, group in by_topic.items():
        if len(group) > keep:
            group.sort(key=negated.__getitem__)
            end = keep
            while end < len(group) and negated[group[end]] == negated[group[keep - 1]]:
                end += 1
            cut[topic] = len(group) - end
            group = group[:end]
        shortlist += group
    return shortlist, cut


def _walk(items: tuple[PersonaFact, ...], scores: list[float], ordered: list[int], limit: int, facts: FactSet,
          *, cut: dict[str, int], explain: bool, prepared: PreparedFacts) -> RankedPersona | None:
    """Facts in rank order: collapse duplicates into the stronger, fill each topic up to ``limit``.

    None when duplicates left a topic that was cut short with fewer than
    ``limit`` facts: the facts left off its shortlist are then needed.
    """
    seen: dict[str, str] = {}  # dedupe key -> the stronger fact that kept it
    groups: dict[str, list[RankedFact]] = defaultdict(list)
    omitted: dict[str, int] = defaultdict(int)
    left_out: list[LeftOut] | None = list(facts.left_out) if explain else None
    duplicates = 0
    prepare = prepared.get
    for index in ordered:
        fact = items[index]
        key = prepare(fact.content).dedupe
        if key in seen:
            duplicates += 1
            if left_out is not None:
                left_out.append(LeftOut(fact, f"duplicate of {fact_label(seen[key])}", scores[index]))
            continue
        seen[key] = fact.key
        group = groups[fact.topic]
        if len(group) < limit:
            group.append(RankedFact(fact, scores[index]))
            continue
        omitted[fact.topic] += 1
        if left_out is not None:
            left_out.append(LeftOut(fact, "over max_items_per_section", scores[index]))
    if any(len(groups[topic]) < limit for topic in cut):
        return None
    # Groups were filled in global rank order, so sections come out ranked by their best fact.
    sections = tuple(RankedSection(topic, tuple(group), omitted[topic] + cut.get(topic, 0))
                     for topic, group in groups.items())
    return RankedPersona(sections, len(items), duplicates, facts.generation, facts.memory_watermark,
                         tuple(left_out or ()), facts.out_of_scope)


def _scores(items: tuple[PersonaFact, ...], options: RankOptions, decay_half_life: float | None) -> list[float]:
    """tier weight + w·log(1 + reinforcements) + w·confidence + w·recency.

    With retention on, a long_term fact's confidence is its effective
    (decayed) confidence, so a decaying fact sinks before it is evicted.
    Written as one comprehension over precomputed constants: it runs once per
    fact, 100k times for a large store.
    """
    tiers: dict[str, float] = {str(tier): weight for tier, weight in options.tier_weights.items()}
    reinforcement, confidence = options.reinforcement_weight, options.confidence_weight
    recency_rate = LN2 / options.recency_half_life_days
    decay_rate = LN2 / decay_half_life if decay_half_life is not None else 0.0
    log1p, exp, recency = math.log1p, math.exp, options.recency_weight
    return [
        tiers.get(f.tier, 0.0)
        + reinforcement * log1p(f.reinforcement_count)
        + confidence * f.confidence * (exp(-f.age_days * decay_rate) if f.tier == "long_term" else 1.0)
        + recency * exp(-f.age_days * recency_rate)
        for f in items
    ]
