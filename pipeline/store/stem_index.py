"""The proposal check's candidates, from an index of content stems: a write is judged against the facts of its topic
that share a stem with it (at most :data:`PER_STEM` per stem) and the topic's :data:`RECENT` latest facts, so its
cost does not grow with the topic's size (issue 38: a promote judged every fact of its topic, 325 there).

A slot a fact fills (:mod:`.slots`: its editor, where the user lives...) is indexed as one more stem. Table
``persona_stems`` holds, per profile, one row per (topic and stem, fact); a row keyed by the topic alone lists every
fact of the topic. Keys are keyed hashes (this database's secret, :mod:`.forgotten`), never text: a stem is a piece
of a fact. PostgreSQL holds the same keys in a compact form, one row per (topic, fact) with its stems in an array
(:mod:`.stem_sets`), and picks the same candidates from the topic's rows (a narrow read that grows with the topic;
the judging, which costs, stays bounded). The write path indexes what it writes; rows other tools add to
``memoria_persona`` are indexed lazily, at the next check: ``persona_stemmed.upto`` is the highest fact id the index
has read (ids only grow). A fact that leaves the persona keeps its rows until it is forgotten (candidates are read
back from ``memoria_persona``, so a stale row names nothing), and forgetting removes them with the fact. A fact
another tool rewrites in place keeps the stems of its first text until it is written again.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .. import caches
from . import stem_sets
from .backend import Connection
from .births import BIRTH_JOIN
from .dialect import POSTGRES
from .fact_row import FACT_COLUMNS, Fact

if TYPE_CHECKING:
    from .database import Database

PER_STEM = 24  # the latest facts of the topic one stem brings: a common stem ("answers") does not bring them all
MAX_CANDIDATES = 12  # judged per write, those with most stems in common first
RECENT = 12  # the topic's latest, judged without a stem in common, after those with one ("on Helix for a month now")
CHUNK = 300  # index rows per INSERT: 900 parameters, under every SQLite build's limit
SEPARATOR = "\x1f"  # between topic and stem in a key: a character no topic or word holds
SLOT = "\x1eslot:"  # before a slot's name in a key (:mod:`.slots`): no stem starts so
# The highest fact id the index has read for a profile, if this reader made it (else -1: all, again).
SINCE = ("COALESCE((SELECT s.upto FROM persona_stemmed s JOIN persona_stem_readers r ON r.profile = s.profile AND "
         "r.reader = ? WHERE s.profile = ?), -1)")
KEYS_FORMAT = 3  # how :func:`keys` makes a fact's keys from its stems and slots: a change re-indexes (:func:`reader`)


def candidates(store: Database, conn: Connection, new: Fact, *, caught_up: bool = False) -> list[Fact]:
    """The current facts ``new`` is judged against: of its topic, sharing a stem or among the latest
    (``caught_up``: the caller indexed the profile's new facts in this transaction already)."""
    if not caught_up:
        catch_up(store, conn)
    found = keys(_secret(store, conn), new.topic, new.content)
    rows: list[Any]
    if store.dialect is POSTGRES:
        rows = stem_sets.candidates(store, conn, new.id, found, (RECENT, PER_STEM, MAX_CANDIDATES))
    else:
        rows = conn.execute(_candidate_sql(len(found), store.row_problem()), [
            *(value for number, key in enumerate(found)
              for value in (store.profile, key, new.id, PER_STEM if number else RECENT)),
            MAX_CANDIDATES, store.profile]).fetchall()
    return [Fact(**dict(row)) for row in rows]


@caches.memo("stem_index.candidate_sql", owner="process", key="how many index keys, and the row-problem SQL", bound=64)
def _candidate_sql(keys: int, row_problem: str) -> str:
    """One statement for a check's candidates: each key's latest facts (the topic's first, :data:`RECENT` of
    them; a stem's :data:`PER_STEM`), the :data:`MAX_CANDIDATES` with most *stems* in common, then the latest,
    read whole. The topic's key counts for no stem: a recent fact that shares nothing would otherwise tie with an
    older one that shares a stem and win on recency. Judging costs more than reading, so the best are chosen
    before any row is."""
    each = ("SELECT persona_id, {} AS stem FROM (SELECT persona_id FROM persona_stems WHERE profile = ? AND "
            "stem = ? AND persona_id != ? ORDER BY persona_id DESC LIMIT ?) AS k{}")
    shared = " UNION ALL ".join(each.format(min(number, 1), number) for number in range(keys))
    best = (f"SELECT persona_id FROM ({shared}) AS shared GROUP BY persona_id "
            "ORDER BY SUM(stem) DESC, persona_id DESC LIMIT ?")
    return (f"SELECT {FACT_COLUMNS}, b.scope FROM memoria_persona p {BIRTH_JOIN} WHERE id IN ({best}) AND "
            f"session_id || '' = ? AND ({row_problem}) IS NULL ORDER BY id")


def catch_up(store: Database, conn: Connection) -> None:
    """Index the profile's facts written since the index last read (by any tool; on the first check, all; after
    the reader changed, :func:`reader`, all again: their old rows go first)."""
    # A read of the rows written since, whoever wrote them, in one statement. SQLite by id only (`session_id || ''`
    # keeps it off the (session_id, tier) index, which would read the whole profile); PostgreSQL through its
    # (session_id, id) index, as by id alone it would read every profile's rows since (a new profile: the table).
    profile = "session_id = ?" if store.dialect is POSTGRES else "session_id || '' = ?"
    rows = conn.execute(f"SELECT id, topic, content, {SINCE} AS since FROM memoria_persona WHERE id > {SINCE} AND "
                        f"{profile} ORDER BY id",
                        (reader(), store.profile, reader(), store.profile, store.profile)).fetchall()
    if not rows:
        return
    if int(rows[0][3]) == -1:  # the first check, or one after the reader changed: no row of another reader stays
        _drop_rows(store, conn)
        conn.execute("INSERT INTO persona_stem_readers (profile, reader) VALUES (?, ?) ON CONFLICT (profile) DO "
                     "UPDATE SET reader = excluded.reader", (store.profile, reader()))
    index(store, conn, ((int(r[0]), r[1], r[2]) for r in rows if isinstance(r[1], str) and isinstance(r[2], str)))
    conn.execute("INSERT INTO persona_stemmed (profile, upto) VALUES (?, ?) ON CONFLICT (profile) DO UPDATE SET "
                 "upto = excluded.upto", (store.profile, max(int(r[0]) for r in rows)))


@caches.memo("stem_index.reader", owner="process", key="none: the word lists, read once", bound=1)
def reader() -> str:
    """A fingerprint of what makes a fact's keys (:func:`keys`): the word lists the stems and slots are read with,
    and :data:`KEYS_FORMAT`. An index made by another is re-made at the next check."""
    from . import slot_words, stems, supersede_words

    # Sets sorted: their order changes with each process's string hashing, the fingerprint must not.
    lists = (KEYS_FORMAT, slot_words.CUES, slot_words.KNOWN_VALUES, sorted(slot_words.CUED_ONLY),
             sorted(supersede_words.STOPWORDS), supersede_words.CHANGE_SIGNALS, supersede_words.STRONG_SIGNALS,
             supersede_words.ADDITIVE_SIGNALS, sorted(stems.LIGHT),
             [(lang, sorted(words)) for lang, words in stems.MARKERS.items()])
    return hashlib.blake2b(repr(lists).encode("utf-8"), digest_size=8).hexdigest()


def index(store: Database, conn: Connection, facts: Iterable[tuple[int, str, str]]) -> None:
    """Add the rows of ``facts`` (id, topic, content) to the index."""
    secret = _secret(store, conn)
    if store.dialect is POSTGRES:
        stem_sets.index(store, conn, [(fact_id, keys(secret, topic, content)) for fact_id, topic, content in facts])
        return
    rows = [(store.profile, key, fact_id) for fact_id, topic, content in facts for key in keys(secret, topic, content)]
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start:start + CHUNK]
        conn.execute("INSERT INTO persona_stems (profile, stem, persona_id) VALUES "
                     + ", ".join("(?, ?, ?)" for _ in chunk) + " ON CONFLICT DO NOTHING",
                     [value for row in chunk for value in row])


@caches.memo("stem_index.keys", owner="process", key="the store's index secret, a fact's topic and text",
             bound=1024, holds_text=True)
def keys(secret: bytes, topic: str, content: str) -> tuple[str, ...]:
    """The index keys of a fact: (the keyed hashes of) its topic, and its topic with each content stem (a write
    indexes its fact, then looks its keys up: once each)."""
    from .slot_reading import filled_slots  # the write path's own readers, as PyStemmer
    from .stems import content_stems

    key = _topic_key(topic)
    # A slot counts as a stem: "Moved to Porto" finds "Lives in Lisbon" in a full topic without a word in common.
    slots = (SLOT + slot for slot in filled_slots(content.casefold()))
    return (_hashed(secret, key), *sorted(_hashed(secret, key + SEPARATOR + stem)
                                          for stem in (*content_stems(content), *slots)))


def forget(store: Database, conn: Connection, ids: Iterable[int]) -> None:
    """Remove the rows of the facts ``ids`` (forget; caller's transaction): stems are pieces of their text."""
    if store.dialect is POSTGRES:
        stem_sets.forget(store, conn, list(ids))
        return
    for fact_id in ids:
        conn.execute("DELETE FROM persona_stems WHERE profile = ? AND persona_id = ?", (store.profile, fact_id))


def forget_profile(store: Database, conn: Connection) -> None:
    """Remove the profile's whole index (profile erase; caller's transaction)."""
    _drop_rows(store, conn)
    conn.execute("DELETE FROM persona_stemmed WHERE profile = ?", (store.profile,))
    conn.execute("DELETE FROM persona_stem_readers WHERE profile = ?", (store.profile,))


def _drop_rows(store: Database, conn: Connection) -> None:
    if store.dialect is POSTGRES:
        stem_sets.forget_profile(store, conn)
    else:
        conn.execute("DELETE FROM persona_stems WHERE profile = ?", (store.profile,))


def _secret(store: Database, conn: Connection) -> bytes:
    from .forgotten import secret

    return secret(store, conn)[:64]  # blake2b's longest key


def _hashed(secret: bytes, raw: str) -> str:
    """A key's keyed hash: 96 bits, short enough to index, long enough that two keys never meet."""
    return hashlib.blake2b(raw.encode("utf-8", "surrogatepass"), key=secret, digest_size=12).hexdigest()


def _topic_key(topic: str) -> str:
    return unicodedata.normalize("NFKC", topic).casefold()
