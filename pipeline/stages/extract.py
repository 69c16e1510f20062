"""extract: the session's persona rows, plus optional candidate memories."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from pydantic import Field

from ..clock import to_db
from ..render.model import FactSet, LeftOut, PersonaFact, Start
from ..store import SQLITE, TOMBSTONE_MARK, Connection, Dialect, PersonaStore, metadata_topic, profile_generation
from ..tiers import TIERS
from .context import StageContext
from .registry import StageOptions, stage

NUMBERS = frozenset({int, float})
SESSION_ROWS = "SELECT COUNT(*) FROM memoria_persona WHERE session_id = ?"


@functools.cache
def persona_sql(dialect: Dialect) -> str:
    """Each fact built by the database, ready to become a PersonaFact.

    Python then checks the contract (checking in SQL cost more than the read
    itself). On SQLite, "+session_id" reads the table in order instead of
    through an index: a persona table is mostly one profile's rows, and an
    index walk (random page order) took 1.4-2.4x as long as the scan.
    """
    age = dialect.age_days("?", "COALESCE(last_reinforced_at, created_at)")
    profile = "+session_id" if dialect is SQLITE else "session_id"
    return f"""
SELECT 'p:' || {dialect.padded_id('id')}, tier, topic, content, COALESCE(confidence, 0.7),
       COALESCE(reinforcement_count, 0), COALESCE({dialect.greatest}(0.0, {age}), 0.0), 'persona'
FROM memoria_persona WHERE {profile} = ?
"""


@functools.cache
def candidate_sql(dialect: Dialect, table: str, sources: int, max_chars: int) -> str:
    """Unpromoted, untombstoned memories of the profile from ``table``, with their age in days."""
    age = dialect.age_days("?", "COALESCE(m.timestamp, m.created_at)")
    marks = ", ".join("?" for _ in range(sources))
    return f"""
SELECT m.id, m.content, m.metadata_json, COALESCE(m.importance, 0.0), {dialect.greatest}(0.0, {age})
FROM {table} m
WHERE m.session_id = ? AND m.source IN ({marks}) AND m.importance >= ? AND TRIM(m.content) != ''
  AND {dialect.is_text('m.content')} AND length(m.content) <= {int(max_chars)}
  AND {dialect.is_number('m.importance')}
  AND NOT EXISTS (SELECT 1 FROM memoria_persona p WHERE p.session_id = m.session_id AND p.source_memory_id = m.id)
  AND NOT EXISTS (SELECT 1 FROM memoria_preferences t WHERE t.source_memory_id = m.id
                  AND t.evolution = '{TOMBSTONE_MARK}' AND t.session_id = m.session_id)
"""


class ExtractOptions(StageOptions):
    candidates: bool = Field(False, description="Also propose unpromoted memories as working-tier facts.")
    candidate_sources: list[str] = Field(
        default_factory=lambda: ["preference", "persona", "stated"],
        description="Memory `source` values that may be proposed.",
    )
    min_importance: float = Field(0.8, ge=0.0, le=1.0, description="Least importance of a proposed memory.")


@stage("extract", options=ExtractOptions)
def extract(start: Start, *, ctx: StageContext, options: ExtractOptions) -> FactSet:
    """Read the session's facts in one consistent snapshot."""
    store, now = ctx.store, to_db(ctx.clock())
    with store.snapshot() as conn:
        facts = _persona_facts(conn.execute(persona_sql(store.dialect), (now, store.session)), store.max_fact_chars)
        broken = conn.execute(SESSION_ROWS, (store.session,)).fetchone()[0] != len(facts)
        if options.candidates and options.candidate_sources:
            facts += _candidates(store, conn, now, options)
        generation = profile_generation(conn, store.session)
        watermark = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM working_memory").fetchone()[0]
        left_out = _left_out(store, conn, now, options) if ctx.explain else ()
    if broken:
        store.warn_broken_rows()
    return FactSet(tuple(facts), int(generation), int(watermark), left_out)


def _persona_facts(rows: Iterable[tuple[Any, ...]], max_chars: int) -> list[PersonaFact]:
    """Facts from the rows that keep the contract (the store names the others).

    One comprehension with the checks inline, streamed from the cursor: at 100k rows a function
    call per row costs more than reading the row, and holding every raw row as well as every
    fact cost 11 MB more at the peak.
    """
    make = PersonaFact._make
    return [make(row) for row in rows
            if type(row[3]) is str and type(row[2]) is str and row[1] in TIERS and 0 < len(row[3]) <= max_chars
            and type(row[4]) in NUMBERS and 0 <= row[4] <= 1 and type(row[5]) is int and row[5] >= 0
            and not row[3].isspace()]


def _left_out(store: PersonaStore, conn: Connection, now: str, options: ExtractOptions) -> tuple[LeftOut, ...]:
    """For `persona explain`: demoted facts (their tombstones), and candidates below the threshold."""
    found = [LeftOut(PersonaFact(f"t:{row[0]}", _demoted_tier(row[1]), str(row[2] or "general"), str(row[1]), 0.0,
                                 0, 0.0, "tombstone"), "demoted (tombstone)")
             for row in conn.execute("SELECT id, preference, topic FROM memoria_preferences WHERE session_id = ? "
                                     "AND evolution = ? ORDER BY id", (store.session, TOMBSTONE_MARK))]
    if options.candidates and options.candidate_sources:
        below = options.model_copy(update={"min_importance": 0.0})
        found += [LeftOut(fact, "candidate below min_importance")
                  for fact in _candidates(store, conn, now, below)
                  if fact.confidence < options.min_importance]
    return tuple(found)


def _demoted_tier(tombstone: str) -> str:
    """The tier in a tombstone's text, ``[demoted from long_term] ...``."""
    head = str(tombstone).partition("]")[0]
    return head.removeprefix("[demoted from ").strip() or "long_term"


def _candidates(store: PersonaStore, conn: Connection, now: str, options: ExtractOptions) -> list[PersonaFact]:
    found = []
    for table in ("working_memory", "episodic_memory"):
        sql = candidate_sql(store.dialect, table, len(options.candidate_sources), int(store.max_fact_chars))
        params = (now, store.session, *options.candidate_sources, options.min_importance)
        for memory_id, content, metadata, importance, age in conn.execute(sql, params):
            topic = metadata_topic(metadata) or "general"
            found.append(PersonaFact(f"m:{memory_id}", "working", topic, content, float(importance), 0,
                                     float(age or 0.0), "candidate"))
    return found
