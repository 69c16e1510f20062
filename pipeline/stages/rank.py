"""rank: score, collapse near-duplicates, group by topic, and order everything totally."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from ..render.model import FactSet, LeftOut, PersonaFact, RankedFact, RankedPersona, RankedSection, fact_label
from ..render.prepared import PreparedFacts
from ..tiers import TIER_RANK, Tier
from .context import StageContext
from .kept_rows import KEPT_ROWS, KeptRows
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
    half_life = retention.half_life_days if retention.enabled else None
    kept: KeptRows | None = ctx.cache.get(KEPT_ROWS)
    if not ctx.explain and kept is not None and kept.made(items):
        ranked = _rank_kept(kept, facts, options, half_life, ctx.prepared)
        if ranked is not None:
            return ranked
    scores = _scores(items, options, half_life)

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


@dataclass(slots=True)
class _Keys:
    """The dedupe keys a walk saw: each by the fact that kept it, and those more than one fact had."""

    kept: dict[str, str] = field(default_factory=dict)
    collided: set[str] = field(default_factory=set)


def _walk(items: tuple[PersonaFact, ...], scores: list[float], ordered: list[int], limit: int, facts: FactSet,
          *, cut: dict[str, int], explain: bool, prepared: PreparedFacts, keys: _Keys | None = None
          ) -> RankedPersona | None:
    """Facts in rank order: collapse duplicates into the stronger, fill each topic up to ``limit``; ``keys``, when
    given, gets the dedupe keys it saw.

    None when duplicates left a topic that was cut short with fewer than
    ``limit`` facts: the facts left off its shortlist are then needed.
    """
    seen: dict[str, str] = keys.kept if keys is not None else {}  # dedupe key -> the stronger fact that kept it
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
            if keys is not None:
                keys.collided.add(key)
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


@dataclass(frozen=True, slots=True)
class _Fixed:
    """What rank derives from kept rows alone (:mod:`.kept_rows`): each fact's score but for the terms its age
    moves, each topic's facts, the order ties of score fall back on, and the last walk's result by its input."""

    base: list[float]  # tier weight + reinforcement term (+ the confidence term, where no decay applies)
    decaying: list[float | None]  # a decaying long_term fact's confidence term before its decay, else None
    by_topic: list[list[int]]
    tie_order: list[int]  # each fact's place in (tier, reinforcement descending, key) order
    walks: dict[tuple[object, ...], Any] = field(default_factory=dict)


def _fixed(items: tuple[PersonaFact, ...], options: RankOptions,
           decay_half_life: float | None) -> _Fixed:
    """The parts of :func:`_scores` and of rank's order that only the rows decide, each computed as it does."""
    tiers: dict[str, float] = {str(tier): weight for tier, weight in options.tier_weights.items()}
    reinforcement, confidence = options.reinforcement_weight, options.confidence_weight
    decays = decay_half_life is not None
    base: list[float] = []
    decaying: list[float | None] = []
    for f in items:
        head, term = _fixed_terms(f, tiers, reinforcement, confidence, decays)
        base.append(head)
        decaying.append(term)
    by_topic: dict[str, list[int]] = defaultdict(list)
    for index, fact in enumerate(items):
        by_topic[fact.topic].append(index)
    ties = sorted(range(len(items)), key=lambda i: (TIER_RANK.get(items[i].tier, len(TIER_RANK)),
                                                     -items[i].reinforcement_count, items[i].key))
    tie_order = [0] * len(items)
    for place, index in enumerate(ties):
        tie_order[index] = place
    return _Fixed(base, decaying, list(by_topic.values()), tie_order)


def _fixed_terms(f: PersonaFact, tiers: dict[str, float], reinforcement: float, confidence: float,
                 decays: bool) -> tuple[float, float | None]:
    """One fact's part of :class:`_Fixed`'s base and decaying terms."""
    head = tiers.get(f.tier, 0.0) + reinforcement * math.log1p(f.reinforcement_count)
    term = confidence * f.confidence
    if decays and f.tier == "long_term":
        return head, term
    return head + term * 1.0, None  # exp(-age * 0.0) is exactly 1.0: the term is fixed


def _refreshed(kept: KeptRows, key: Hashable, items: tuple[PersonaFact, ...], options: RankOptions,
               decay_half_life: float | None, prepared: PreparedFacts) -> _Fixed | None:
    """What rank derived from the rows ``kept`` was patched from, made again only where a row changed in place:
    None where there is none, or a change moved what the order of ties or the topics go by (key, tier,
    reinforcements, topic: the rows' fields 0, 1, 5 and 2), which :func:`_fixed` then derives whole."""
    parent = kept.parent
    fixed = parent.derived.get(key) if parent is not None else None
    if parent is None or fixed is None:
        return None
    if any(parent.rows[i][:3] != kept.rows[i][:3] or parent.rows[i][5] != kept.rows[i][5] for i in kept.updated):
        return None
    tiers: dict[str, float] = {str(tier): weight for tier, weight in options.tier_weights.items()}
    base, decaying = list(fixed.base), list(fixed.decaying)
    for index in kept.updated:
        base[index], decaying[index] = _fixed_terms(items[index], tiers, options.reinforcement_weight,
                                                    options.confidence_weight, decay_half_life is not None)
    walks = {order: (positions, duplicates, keys) for order, (positions, duplicates, walked) in fixed.walks.items()
             if (keys := _rekeyed(walked, parent, kept, prepared)) is not None}
    return _Fixed(base, decaying, fixed.by_topic, fixed.tie_order, walks)


def _rekeyed(keys: _Keys, parent: KeptRows, kept: KeptRows, prepared: PreparedFacts) -> _Keys | None:
    """The dedupe keys of a walk of ``parent``'s rows, as a walk in the same order of ``kept``'s would see them;
    None unless that walk collapses the very same facts. A text changed in place leaves every fact's fate as it
    was where its old key was its own alone and its new key is no other fact's it saw (content: the rows' field 3)."""
    new = _Keys(dict(keys.kept), keys.collided)
    for index in kept.updated:
        fact_key, was, now = kept.rows[index][0], parent.rows[index][3], kept.rows[index][3]
        before, after = prepared.get(was).dedupe, prepared.get(now).dedupe
        if before == after:
            continue
        if before in new.collided:
            return None
        if new.kept.get(before) != fact_key:
            continue  # a fact the walk never saw: not on its shortlist, which the walk's order holds
        if after in new.kept:
            return None
        del new.kept[before]
        new.kept[after] = fact_key
    return new


def _rank_kept(kept: KeptRows, facts: FactSet, options: RankOptions, decay_half_life: float | None,
               prepared: PreparedFacts) -> RankedPersona | None:
    """:func:`rank` of facts kept rows made: the same scores (the same operations in the same order), the same
    total order (a stable sort by score of facts in tie order is the order by score, then tie order), and the
    walk's result reused while its input, the order, is the same. None where rank must rank everything."""
    items = facts.facts
    key = ("rank", tuple(sorted(options.tier_weights.items())), options.reinforcement_weight,
           options.confidence_weight, options.recency_weight, options.recency_half_life_days, decay_half_life)
    fixed = kept.derived.get(key)
    if fixed is None:
        fixed = (_refreshed(kept, key, items, options, decay_half_life, prepared)
                 or _fixed(items, options, decay_half_life))
        kept.derived[key] = fixed
    kept.parent = None
    exp, recency, rate = math.exp, options.recency_weight, LN2 / options.recency_half_life_days
    decay_rate = LN2 / decay_half_life if decay_half_life is not None else 0.0
    scores = [(head if term is None else head + term * exp(-f.age_days * decay_rate))
              + recency * exp(-f.age_days * rate)
              for head, term, f in zip(fixed.base, fixed.decaying, items, strict=True)]
    limit = options.max_items_per_section
    shortlist, cut = _strongest_of(fixed.by_topic, items, scores, limit)
    shortlist.sort(key=fixed.tie_order.__getitem__)
    negated = [-score for score in scores]
    shortlist.sort(key=negated.__getitem__)
    walk_key = (limit, tuple(shortlist), tuple(cut.items()))
    walked = fixed.walks.get(walk_key)
    if walked is None:
        keys = _Keys()
        ranked = _walk(items, scores, shortlist, limit, facts, cut=cut, explain=False, prepared=prepared, keys=keys)
        if ranked is None:
            return None
        fixed.walks.clear()  # only the last order is kept
        fixed.walks[walk_key] = walked = (_positions(ranked, items), ranked.duplicates_collapsed, keys)
    sections = tuple(RankedSection(topic, tuple(RankedFact(items[i], scores[i]) for i in indexes), omitted)
                     for topic, indexes, omitted in walked[0])
    return RankedPersona(sections, len(items), walked[1], facts.generation, facts.memory_watermark, (),
                         facts.out_of_scope)


def _strongest_of(by_topic: list[list[int]], items: tuple[PersonaFact, ...], scores: list[float],
                  limit: int) -> tuple[list[int], dict[str, int]]:
    """:func:`_strongest` over topics already grouped."""
    shortlist: list[int] = []
    cut: dict[str, int] = {}
    keep = 2 * limit
    negated = [-score for score in scores]
    for group in by_topic:
        if len(group) > keep:
            group = sorted(group, key=negated.__getitem__)
            end = keep
            while end < len(group) and negated[group[end]] == negated[group[keep - 1]]:
                end += 1
            cut[items[group[0]].topic] = len(group) - end
            group = group[:end]
        shortlist += group
    return shortlist, cut


def _positions(ranked: RankedPersona, items: tuple[PersonaFact, ...]) -> list[tuple[str, list[int], int]]:
    """Each section of a walk's result as its topic, its facts' indexes in ``items`` and its omitted count."""
    index_of = {id(fact): index for index, fact in enumerate(items)}
    return [(s.topic, [index_of[id(r.fact)] for r in s.facts], s.omitted) for s in ranked.sections]
