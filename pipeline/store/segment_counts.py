"""A render's segments' exact counts (:func:`pipeline.render.tokens.segments`): a line of a render, with the blank
lines after it, counted once, so a render of lines counted before loads no tokenizer. Kept by keyed hash (the
store's secret, :mod:`.forgotten`), never text: a segment holds a fact's text. A forget drops them all
(:func:`.token_counts.forget`), whichever profile's, and a render that counts them keeps them again.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from .forgotten import secret
from .token_counts import CHUNK, SEGMENTS

if TYPE_CHECKING:
    from .backend import Connection
    from .database import Database


def known(store: Database, encoding: str, segments: Sequence[str]) -> dict[str, int]:
    """The kept counts of ``segments`` under ``encoding``."""
    found: dict[str, int] = {}
    with store.read() as conn:
        if not (store.known_secret or conn.execute("SELECT 1 FROM persona_secret WHERE id = 1").fetchone()):
            return {}  # no secret yet, so no segment was ever kept (a read makes none)
        hashed = _segment_digests(store, conn, segments)
        wanted = sorted(set(hashed.values()))
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start:start + CHUNK]
            found.update((str(row[0]), int(row[1])) for row in conn.execute(
                f"SELECT digest, tokens FROM {SEGMENTS} WHERE encoding = ? AND digest IN "
                f"({', '.join('?' for _ in chunk)})", (encoding, *chunk)))
    return {segment: found[key] for segment, key in hashed.items() if key in found}


def keep(store: Database, encoding: str, counted: Mapping[str, int]) -> None:
    """Keep segments' exact counts, in a transaction that need not wait for the disk (a lost one is counted
    again)."""
    if not counted:
        return
    with store.transaction(durable=False, batched=True) as conn:
        hashed = _segment_digests(store, conn, list(counted))
        for segment, tokens in counted.items():
            conn.execute(f"INSERT INTO {SEGMENTS} (encoding, digest, tokens) VALUES (?, ?, ?) ON CONFLICT "
                         "(encoding, digest) DO NOTHING", (encoding, hashed[segment], tokens))


def _segment_digests(store: Database, conn: Connection, segments: Sequence[str]) -> dict[str, str]:
    key = secret(store, conn)
    return {segment: hmac.digest(key, b"segment\x00" + segment.encode("utf-8", "surrogatepass"), "sha256").hex()
            for segment in segments}
