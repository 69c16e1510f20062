"""PostgreSQL's form of the proposal check's stem index (:mod:`.stem_index`): one row per (topic, fact), its
stems an array of 64-bit keyed hashes, instead of one row per (topic and stem, fact) (issue 52: that table was two
thirds of a fleet's database, 3.7 times ``memoria_persona``; this one is smaller than the facts).

Table ``persona_stem_sets``, keyed (profile, topic, fact): a check reads the rows of its topic (bounded by the
topic's size, through that key) and picks the same candidates SQLite's per-stem rows give: each stem's
:data:`~.stem_index.PER_STEM` latest facts, the topic's :data:`~.stem_index.RECENT` latest, the
:data:`~.stem_index.MAX_CANDIDATES` with most stems in common. A fact indexed again under the same topic (another
tool rewrote it) keeps the stems of both texts, as SQLite's rows do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .backend import Connection
from .births import BIRTH_JOIN
from .fact_row import FACT_COLUMNS

if TYPE_CHECKING:
    from .database import Database

# The rows as arrays, one per column (a fact's stems as the text of its array): one short statement whatever
# their number, parsed and planned once (:mod:`.new_rows` says why).
INSERT = ("INSERT INTO persona_stem_sets AS s (profile, topic, persona_id, stems) SELECT ?, t.topic, t.persona_id, "
          "t.stems::bigint[] FROM unnest(?::bigint[], ?::bigint[], ?::text[]) AS t (topic, persona_id, stems) "
          "ON CONFLICT (profile, topic, persona_id) DO UPDATE SET stems = ARRAY(SELECT DISTINCT "
          "unnest(s.stems || excluded.stems) ORDER BY 1) WHERE NOT s.stems @> excluded.stems")


def numbers(keys: Sequence[str]) -> tuple[int, list[int]]:
    """(the topic's key, the distinct stem keys) as signed 64-bit integers, from :func:`.stem_index.keys`'s hex
    hashes: 64 of their 96 bits, so two stems of one topic never meet either."""
    topic, *stems = (int.from_bytes(bytes.fromhex(key)[:8], "big", signed=True) for key in keys)
    return topic, sorted(set(stems))


def index(store: Database, conn: Connection, rows: Iterable[tuple[int, Sequence[str]]]) -> None:
    """Add the facts of ``rows`` (id, :func:`.stem_index.keys`) to the index (caller's transaction)."""
    topics, ids, stems = list[int](), list[int](), list[str]()
    for fact_id, keys in rows:
        topic, numbered = numbers(keys)
        topics.append(topic)
        ids.append(fact_id)
        stems.append("{" + ",".join(map(str, numbered)) + "}")
    if ids:
        conn.execute(INSERT, (store.profile, topics, ids, stems))


def candidates(store: Database, conn: Connection, new_id: int, keys: Sequence[str],
               sizes: tuple[int, int, int]) -> list[Any]:
    """The rows of the current facts a write of ``new_id`` (with ``keys``) is judged against; ``sizes``: (latest
    of the topic, per stem, in all)."""
    topic, stems = numbers(keys)
    recent, per_stem, most = sizes
    return list(conn.execute(_candidate_sql(store.row_problem()), [
        store.profile, topic, new_id, stems, per_stem, recent, most, store.profile]).fetchall())


def _candidate_sql(row_problem: str) -> str:
    """The topic's rows once; each shared stem's latest facts and the topic's latest, the best by stems in common
    (the topic's latest count for none), read whole: :func:`.stem_index._candidate_sql`'s choice, in one pass."""
    return f"""WITH topic AS MATERIALIZED (SELECT persona_id, stems FROM persona_stem_sets
        WHERE profile = ? AND topic = ? AND persona_id != ?),
    hits AS (SELECT persona_id, row_number() OVER (PARTITION BY stem ORDER BY persona_id DESC) AS n
        FROM topic, unnest(stems) AS stem WHERE stem = ANY(?::bigint[])),
    shared AS (SELECT persona_id, 1 AS stem FROM hits WHERE n <= ?
        UNION ALL (SELECT persona_id, 0 FROM topic ORDER BY persona_id DESC LIMIT ?)),
    best AS (SELECT persona_id FROM shared GROUP BY persona_id ORDER BY SUM(stem) DESC, persona_id DESC LIMIT ?)
    SELECT {FACT_COLUMNS}, b.scope FROM memoria_persona p {BIRTH_JOIN}
    WHERE id IN (SELECT persona_id FROM best) AND session_id = ? AND ({row_problem}) IS NULL ORDER BY id"""


def forget(store: Database, conn: Connection, ids: Sequence[int]) -> None:
    """Remove the rows of the facts ``ids`` (forget; caller's transaction)."""
    if ids:
        conn.execute("DELETE FROM persona_stem_sets WHERE profile = ? AND persona_id = ANY(?::bigint[])",
                     (store.profile, list(ids)))


def forget_profile(store: Database, conn: Connection) -> None:
    """Remove the profile's whole index (profile erase; caller's transaction)."""
    conn.execute("DELETE FROM persona_stem_sets WHERE profile = ?", (store.profile,))
