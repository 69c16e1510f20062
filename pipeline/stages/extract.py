"""extract: the profile's persona rows, plus optional candidate memories."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from typing import Any

from pydantic import Field

from ..clock import to_db
from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER, DEFAULT_TOPIC
from ..render.model import FactSet, LeftOut, PersonaFact, Start, fact_label
from ..render.prepared import PreparedFacts
from ..store import Connection, PersonaStore, metadata_topic
from ..store.forgotten import forgotten_test
from ..store.learned import learned_from
from ..store.memories import candidates, tombstones
from ..store.render_rows import RenderState, changed_rows
from ..store.supersede import superseded_rows
from ..text import normal_form, spellings
from ..tiers import TIERS
from ..warn_once import ProblemLog
from .context import BESIDE_MEMORY, StageContext
from .kept_rows import KEPT_ROWS, KeptRows
from .registry import StageOptions, stage

NUMBERS = frozenset({int, float})
LAST_ROWS = "persona rows"  # the render memo's entry: (what they were read as, the KeptRows)
FORGOTTEN_AGAIN = ProblemLog(logging.getLogger(__name__))


class ExtractOptions(StageOptions):
    candidates: bool = Field(False, description="Also propose unpromoted memories as working-tier facts.")
    candidate_sources: list[str] = Field(
        default_factory=lambda: ["preference", "persona", "stated"],
        description="Memory `source` values that may be proposed.",
    )
    min_importance: float = Field(0.8, ge=0.0, le=1.0, description="Least importance of a proposed memory.")


@stage("extract", options=ExtractOptions)
def extract(start: Start, *, ctx: StageContext, options: ExtractOptions) -> FactSet:
    """Read the profile's facts, labelled with the change counter read before them.

    No read transaction is needed: the counter and the watermark are read
    first (on a server, in the statement that reads the facts, at one moment),
    so whatever the facts read after them hold is at least that generation. A change landing in between is rendered
    under the older label, and the next tick renders again; a render never
    claims a generation newer than its facts.
    """
    store, now = ctx.store, to_db(ctx.clock())
    with store.read() as conn:
        state, facts = _read_facts(store, conn, now, ctx)
        # A row that breaks the contract (or one added meanwhile: the check then finds none).
        broken = state.rows != len(facts)
        if state.forgot:
            facts = _not_forgotten(store, conn, facts)
        proposed = _candidates(store, conn, now, options) if options.candidates and options.candidate_sources else []
        left_out = _left_out(store, conn, now, options) if ctx.explain else ()
        learned = learned_from(conn, store.profile) if ctx.cache.get(BESIDE_MEMORY, True) else {}
    if broken:
        store.warn_broken_rows()
    spelled = one_spelling([*facts, *proposed], ctx.settings.topics.aliases, ctx.prepared)
    return FactSet(tuple(spelled), state.generation, state.watermark, left_out, state.scoped, learned=learned)


def one_spelling(facts: list[PersonaFact], aliases: dict[str, str], prepared: PreparedFacts) -> list[PersonaFact]:
    """Each fact under its topic's one spelling (pipeline/text.py): ``Git`` and ``git`` render as one section,
    shown as first used (the oldest fact's spelling) or as ``topics.aliases`` says. Work per distinct topic, not
    per fact, when no topic has two spellings: the usual case costs one set of the topics, and with the same
    topics as the profile's last render not even their normal forms (a quarter of an unchanged 50-fact render)."""
    distinct = frozenset(fact.topic for fact in facts)
    if not aliases and _each_spelled_once(distinct, prepared):
        return facts
    first: dict[str, tuple[bool, str]] = {}
    for fact in facts:  # a persona row ("p:...") was used before any candidate memory
        when = (not fact.key.startswith("p:"), fact.key)
        if fact.topic not in first or when < first[fact.topic]:
            first[fact.topic] = when
    shown = spellings(first.items(), aliases)
    return [fact if shown[fact.topic] == fact.topic else fact._replace(topic=shown[fact.topic]) for fact in facts]


def _each_spelled_once(topics: frozenset[str], prepared: PreparedFacts) -> bool:
    """Whether no two of ``topics`` share a normal form, remembered with the profile's render memo (which a
    forget drops) under the topics themselves."""
    key = ("topics spelled once", topics)
    once = prepared.reused(key)
    if once is None:
        once = len({normal_form(topic) for topic in topics}) == len(topics)
        prepared.record(key, once)
    return bool(once)


def _read_facts(store: PersonaStore, conn: Connection, now: str, ctx: StageContext
                ) -> tuple[RenderState, list[PersonaFact]]:
    """The render's state and the profile's facts. On a server, both in one statement (each is a round trip),
    read every time. On SQLite, the checked rows of an unscoped profile that never forgot a fact are kept
    with its render memo (which a forget drops), under what says they are unchanged (:meth:`PersonaStore.keyed_state`:
    the change counter every writer moves, the schema's version) and the profile's row count, and a render while
    that holds only ages them again: what the render reads of them but their age is their text, tier, confidence
    and reinforcements, which every writer's change moves the counter for (a scoped profile's scopes and slots
    move without it: read each time). The run's context names the kept rows, for rank (:mod:`.kept_rows`)."""
    if store.backend.features.round_trips:
        state, rows = store.render_read(conn, now)
        return state, _persona_facts(rows, store.max_fact_chars)
    state, keyed = store.keyed_state(conn, now)
    if keyed is None or keyed[1] is None:
        return state, _persona_facts(store.render_rows(conn, now, scoped=state.scoped), store.max_fact_chars)
    moment, key = keyed
    read_as = (conn, key, state.rows, store.max_fact_chars)
    last: tuple[tuple[Any, ...], KeptRows] | None = ctx.prepared.reused(LAST_ROWS)
    kept = last[1] if last is not None and _same(last[0], read_as) else None
    if kept is None:
        kept = _patched(store, conn, last, read_as) if last is not None else None
        if kept is None:
            rows = tuple(_checked_rows(store.render_rows(conn, now, aging=True), store.max_fact_chars))
            kept = KeptRows(rows, whole=len(rows) == state.rows)
        ctx.prepared.record(LAST_ROWS, (read_as, kept))
    ctx.cache[KEPT_ROWS] = kept
    return state, kept.aged(moment)


def _same(before: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    return before[0] is now[0] and before[1:] == now[1:]


def _patched(store: PersonaStore, conn: Connection, last: tuple[tuple[Any, ...], KeptRows],
             read_as: tuple[Any, ...]) -> KeptRows | None:
    """The last kept rows with what changed since they were read (by our triggers' record of each fact's last
    change) read again, or None where all must be read: another connection (the database at that path may be
    another file now), another schema version (a trigger may have been missing meanwhile), another fact limit,
    an older counter, or rows that do not add up to the profile's row count."""
    (was_conn, (version, generation, _), _, max_chars), kept = last
    conn_now, (version_now, generation_now, _), rows_now, max_chars_now = read_as
    if was_conn is not conn_now or version != version_now or max_chars != max_chars_now \
            or generation_now <= generation:
        return None
    changes = changed_rows(conn, store.profile, generation)
    checked = {row[0]: row for row in _checked_rows((row for _, _, row in changes if row is not None), max_chars)}
    patched = kept.patched([(persona_id, key, checked.get(key)) for persona_id, key, _ in changes])
    return patched if patched is not None and len(patched.rows) == rows_now else None


def _checked_rows(rows: Iterable[tuple[Any, ...]], max_chars: int) -> list[tuple[Any, ...]]:
    """:func:`_persona_facts`' checks over rows that hold their age base (NULL: infinite) for their age."""
    infinite = math.inf
    return [(key, tier, topic, content, DEFAULT_CONFIDENCE if confidence is None else confidence, count,
             infinite if base is None else base, origin, scope, slot)
            for key, tier, topic, content, confidence, count, base, origin, scope, slot in rows
            if type(content) is str and type(topic) is str and tier in TIERS and 0 < len(content) <= max_chars
            and (confidence is None or (type(confidence) in NUMBERS and 0 <= confidence <= 1))
            and type(count) is int and count >= 0 and not content.isspace()]


def _not_forgotten(store: PersonaStore, conn: Connection, facts: list[PersonaFact]) -> list[PersonaFact]:
    """The facts, but for text the user forgot that another tool wrote again (Mnemosyne's own promote, say): our
    own ways in refuse it, and no render ever shows it. Its id is named once; `persona forget ID` erases it."""
    forgotten = forgotten_test(store, conn)
    kept = [fact for fact in facts if not forgotten(fact.content, None)]
    if len(kept) < len(facts):
        again = ", ".join(fact_label(fact.key) for fact in facts if forgotten(fact.content, None))
        FORGOTTEN_AGAIN.warn(f"profile {store.profile} in {store.label}: {again} holds text that was forgotten "
                             "(persona forget); another tool wrote it again, and no render shows it: "
                             "`persona forget ID` erases it")
    return kept


def _persona_facts(rows: Iterable[tuple[Any, ...]], max_chars: int) -> list[PersonaFact]:
    """Facts from the rows that keep the contract (the store names the others); a NULL confidence is the default.

    One comprehension with the checks inline, streamed from the cursor: at 100k rows a function
    call per row costs more than reading the row, and holding every raw row as well as every
    fact cost 11 MB more at the peak. Each row is made a fact first and checked by its fields, which
    the named tuple reads without a call of ours (a row's own indexing is Python on PostgreSQL). Only a
    row with no confidence pays a second call.
    """
    return [fact if fact.confidence is not None else fact._replace(confidence=DEFAULT_CONFIDENCE)
            for fact in map(PersonaFact._make, rows)
            if type(fact.content) is str and type(fact.topic) is str and fact.tier in TIERS
            and 0 < len(fact.content) <= max_chars
            and (fact.confidence is None or (type(fact.confidence) in NUMBERS and 0 <= fact.confidence <= 1))
            and type(fact.reinforcement_count) is int and fact.reinforcement_count >= 0
            and not fact.content.isspace()]


def _left_out(store: PersonaStore, conn: Connection, now: str, options: ExtractOptions) -> tuple[LeftOut, ...]:
    """For `persona explain`: superseded facts, demoted ones (their tombstones), and candidates below the threshold."""
    found = [LeftOut(PersonaFact(f"s:{row[0]}", str(row[1]), str(row[2]), str(row[3]), 0.0, 0, 0.0, "superseded"),
                     f"superseded by #{row[4]}") for row in superseded_rows(conn, store.profile)]
    found += [LeftOut(PersonaFact(f"t:{row[0]}", _demoted_tier(row[1]), str(row[2] or DEFAULT_TOPIC), str(row[1]), 0.0,
                                 0, 0.0, "tombstone"), "demoted (tombstone)")
             for row in tombstones(conn, store.profile)]
    if options.candidates and options.candidate_sources:
        below = options.model_copy(update={"min_importance": 0.0})
        found += [LeftOut(fact, "candidate below min_importance")
                  for fact in _candidates(store, conn, now, below)
                  if fact.confidence < options.min_importance]
    return tuple(found)


def _demoted_tier(tombstone: str) -> str:
    """The tier in a tombstone's text, ``[demoted from long_term] ...``."""
    head = str(tombstone).partition("]")[0]
    return head.removeprefix("[demoted from ").strip() or DEFAULT_TIER


def _candidates(store: PersonaStore, conn: Connection, now: str, options: ExtractOptions) -> list[PersonaFact]:
    forgotten = forgotten_test(store, conn)  # a forgotten memory is never proposed again, as a tombstoned one
    return [PersonaFact(f"m:{memory_id}", "working", metadata_topic(metadata) or DEFAULT_TOPIC, content,
                        float(importance), 0, float(age or 0.0), "candidate")
            for memory_id, content, metadata, importance, age
            in candidates(store, conn, now, options.candidate_sources, options.min_importance)
            if not forgotten(content, memory_id)]
