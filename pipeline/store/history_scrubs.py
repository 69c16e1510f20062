"""Pending history scrubs (``persona_history_scrubs``): what a forget has still to take out of the hosts' histories.

A forget records here, in the transaction that erases the fact, each text it will look for in the hosts' histories:
never the text, but its keyed hash (:func:`pipeline.fs.text_find.digest`, under the store's own key in
``persona_secret``) with its length in tokens and characters, and the place (machine and home) whose histories it
scrubs. The row goes once a scrub of that place has left nothing a later run could change. A kill, a crash or a full
disk in between leaves it, and the next ``persona scrub``, ``forget`` or ``status`` of the profile at that place
finishes the job, finding the text by its hash alone. Rows of another place are another machine's to finish.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..fs.text_find import Needle

if TYPE_CHECKING:  # the schema imports this module for its table, before the backend exists
    from .backend import Connection
    from .database import Database


def history_scrubs() -> tuple[str, ...]:
    """The schema migration that adds the table (the same on both backends)."""
    return ("""CREATE TABLE IF NOT EXISTS persona_history_scrubs (
            profile TEXT NOT NULL,
            place TEXT NOT NULL,
            digest TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            short INTEGER NOT NULL,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (profile, place, digest)
        )""",)


@dataclass(frozen=True, slots=True)
class Pending:
    """One text a forget has still to scrub from a place's histories, known by its hash."""

    place: str
    needle: Needle
    recorded_at: str


def record_scrubs(store: Database, conn: Connection, place: str, needles: Iterable[Needle]) -> None:
    """Journal ``needles`` as pending at ``place`` (inside the caller's transaction: the erasure's)."""
    for found in needles:
        conn.execute("INSERT INTO persona_history_scrubs (profile, place, digest, tokens, chars, short, recorded_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                     (store.profile, place, found.digest, found.tokens, found.chars, int(found.short), store.now()))


def pending_scrubs(store: Database, place: str | None = None) -> list[Pending]:
    """The profile's pending scrubs (at ``place`` only, when given), oldest first."""
    with store.read() as conn:
        rows = conn.execute("SELECT place, digest, tokens, chars, short, recorded_at FROM persona_history_scrubs "
                            "WHERE profile = ? ORDER BY recorded_at, digest", (store.profile,)).fetchall()
    return [Pending(str(row[0]), Needle(str(row[1]), int(row[2]), int(row[3]), bool(row[4])), str(row[5]))
            for row in rows if place is None or row[0] == place]


def finish_scrubs(store: Database, place: str, digests: Iterable[str]) -> None:
    """Drop the journal's rows for ``digests`` at ``place``: their scrub is done."""
    with store.transaction() as conn:
        for digest in digests:
            conn.execute("DELETE FROM persona_history_scrubs WHERE profile = ? AND place = ? AND digest = ?",
                         (store.profile, place, digest))
