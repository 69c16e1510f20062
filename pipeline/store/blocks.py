"""Rendered blocks in the database: what `output: store` targets write and `injection.source: store` reads.

One row per (profile, target) in ``persona_blocks``: the capped text, its
store generation, hash, and exact token count with the counter that made it.
On PostgreSQL a new block is announced with ``NOTIFY persona_blocks`` in the
same transaction, so injectors on every host learn of it when it commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .backend import Connection
from .facts import PersonaStore

CHANNEL = "persona_blocks"
COLUMNS = "profile, target, generation, sha256, text, tokens, counter, rendered_at"


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


class MissingBlock(FileNotFoundError):
    """No block rendered yet for this profile and target (a cold start, as a missing file is)."""


def read_block(store: PersonaStore, target: str) -> StoredBlock | None:
    """The profile's block for ``target``, or None before its first render."""
    with store.read() as conn:
        row = conn.execute(f"SELECT {COLUMNS} FROM persona_blocks WHERE profile = ? AND target = ?",
                           (store.session, target)).fetchone()
    return None if row is None else StoredBlock(*row)


def block_version(store: PersonaStore, target: str) -> str | None:
    """Only the block's hash: the cheap check an injector makes when it cannot listen."""
    with store.read() as conn:
        row = conn.execute("SELECT sha256 FROM persona_blocks WHERE profile = ? AND target = ?",
                           (store.session, target)).fetchone()
    return None if row is None else str(row[0])


def put_block(store: PersonaStore, conn: Connection, block: StoredBlock) -> None:
    """Replace the block (inside the caller's transaction) and announce it to every listening host."""
    conn.execute(
        f"INSERT INTO persona_blocks ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (profile, target) "
        "DO UPDATE SET generation = excluded.generation, sha256 = excluded.sha256, text = excluded.text, "
        "tokens = excluded.tokens, counter = excluded.counter, rendered_at = excluded.rendered_at",
        (block.profile, block.target, block.generation, block.sha256, block.text, block.tokens, block.counter,
         block.rendered_at),
    )
    store.backend.notify(conn, CHANNEL, announcement(block.profile, block.target, block.generation))


def announcement(profile: str, target: str, generation: int) -> str:
    return f"{generation}\t{target}\t{profile}"


def parse_announcement(payload: str) -> tuple[str, str, int] | None:
    """(profile, target, generation), or None for a payload that is not ours."""
    generation, _, rest = payload.partition("\t")
    target, _, profile = rest.partition("\t")
    if not generation.isdigit() or not target:
        return None
    return profile, target, int(generation)


def existing_blocks(store: PersonaStore, targets: list[str]) -> set[str]:
    """Which of ``targets`` have a block for this profile."""
    if not targets:
        return set()
    marks = ", ".join("?" for _ in targets)
    with store.read() as conn:
        rows: Any = conn.execute(f"SELECT target FROM persona_blocks WHERE profile = ? AND target IN ({marks})",
                                 (store.session, *targets)).fetchall()
    return {row[0] for row in rows}
