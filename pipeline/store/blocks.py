"""Rendered blocks in the database: what `output: store` targets write and `injection.source: store` reads.

One row per (profile, target) in ``persona_blocks``: the capped text, its
store generation, hash, and exact token count with the counter that made it.
On PostgreSQL a new block is announced on the deployment's channel (``persona_blocks``
scoped to the schema) in the same transaction, so injectors on every host learn of
it when it commits. Any role that can connect may NOTIFY on that channel, so an
announcement is only ever a hint to check the row, parsed strictly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..config.targets import MAX_TARGET_NAME
from .backend import Connection, Cursor
from .database import Database
from .validation import MAX_PROFILE_CHARS

CHANNEL = "persona_blocks"
GENERATION = re.compile(r"[0-9]{1,18}")  # ASCII only (str.isdigit() takes '²'), and within a BIGINT
COLUMNS = "profile, target, generation, sha256, text, tokens, counter, rendered_at"
PUT = (f"INSERT INTO persona_blocks ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (profile, target) "
       "DO UPDATE SET generation = excluded.generation, sha256 = excluded.sha256, text = excluded.text, "
       "tokens = excluded.tokens, counter = excluded.counter, rendered_at = excluded.rendered_at")


@dataclass(frozen=True, slots=True)
class StoredBlock:
    profile: str
    target: str
    generation: int
    sha256: str
    text: str
    tokens: int
    counter: str
    rendered_at: str


@dataclass(frozen=True, slots=True)
class BoundedBlock:
    """At most a limit of a stored block's UTF-8 bytes, their full size, and what its render recorded."""

    data: bytes
    size: int
    sha256: str
    tokens: Any  # another tool may have stored anything here on SQLite
    counter: str

    @property
    def truncated(self) -> bool:
        return self.size > len(self.data)


class MissingBlock(FileNotFoundError):
    """No block rendered yet for this profile and target (a cold start, as a missing file is)."""


def read_block(store: Database, target: str) -> StoredBlock | None:
    """The profile's block for ``target``, or None before its first render."""
    with store.read() as conn:
        return block_of(ask_block(conn, store.profile, target))


def ask_block(conn: Connection, profile: str, target: str) -> Cursor:
    """The query :func:`block_of` answers: sent now, or queued in a batch until a later answer is read."""
    return conn.execute(f"SELECT {COLUMNS} FROM persona_blocks WHERE profile = ? AND target = ?", (profile, target))


def block_of(asked: Cursor) -> StoredBlock | None:
    row = asked.fetchone()
    return None if row is None else StoredBlock(*row)


def read_bounded(store: Database, target: str, max_bytes: int) -> BoundedBlock | None:
    """The profile's block for ``target`` as at most ``max_bytes`` bytes: a row grown by another tool costs neither
    the host's memory nor the tokenizer's."""
    text = store.backend.dialect.utf8_bytes("text")
    with store.read() as conn:
        row = conn.execute(f"SELECT substr({text}, 1, ?), length({text}), sha256, tokens, counter FROM persona_blocks "
                           "WHERE profile = ? AND target = ?", (int(max_bytes), store.profile, target)).fetchone()
    if row is None:
        return None
    # An empty block (a view whose scopes hold no fact yet) reads back as NULL from substr on SQLite.
    return BoundedBlock(bytes(row[0] or b""), int(row[1] or 0), str(row[2]), row[3], str(row[4]))


def block_version(store: Database, target: str) -> str | None:
    """Only the block's hash: the cheap check an injector makes when it cannot listen."""
    with store.read() as conn:
        row = conn.execute("SELECT sha256 FROM persona_blocks WHERE profile = ? AND target = ?",
                           (store.profile, target)).fetchone()
    return None if row is None else str(row[0])


def put_block(store: Database, conn: Connection, block: StoredBlock) -> None:
    """Replace the block (inside the caller's transaction) and announce it to every listening host."""
    store.backend.write_and_notify(conn, PUT, (block.profile, block.target, block.generation, block.sha256, block.text,
                                               block.tokens, block.counter, block.rendered_at),
                                   CHANNEL, announcement(block.profile, block.target, block.generation))


def announcement(profile: str, target: str, generation: int) -> str:
    return f"{generation}\t{target}\t{profile}"


def parse_announcement(payload: str) -> tuple[str, str, int] | None:
    """(profile, target, generation), or None for any payload that is not exactly one of ours."""
    fields = payload.split("\t", 3)
    if len(fields) != 3:
        return None
    generation, target, profile = fields
    if not GENERATION.fullmatch(generation) or not 0 < len(target) <= MAX_TARGET_NAME:
        return None
    if not 0 < len(profile) <= MAX_PROFILE_CHARS:
        return None
    return profile, target, int(generation)


def existing_blocks(store: Database, targets: list[str]) -> set[str]:
    """Which of ``targets`` have a block for this profile."""
    if not targets:
        return set()
    marks = ", ".join("?" for _ in targets)
    with store.read() as conn:
        rows: Any = conn.execute(f"SELECT target FROM persona_blocks WHERE profile = ? AND target IN ({marks})",
                                 (store.profile, *targets)).fetchall()
    return {row[0] for row in rows}


def delete_blocks_since(store: Database, conn: Connection, generation: int) -> int:
    """Delete the profile's blocks rendered at or after ``generation`` (inside the caller's transaction); the next
    render writes them again."""
    return int(conn.execute("DELETE FROM persona_blocks WHERE profile = ? AND generation >= ?",
                            (store.profile, generation)).rowcount)
