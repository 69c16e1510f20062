"""What `persona learn` took from the hosts' own memory files (``persona_learned``): per profile, host and file, a
keyed hash of each entry it read (:func:`.forgotten.digests`, under the store's own key), never the text. An entry
read once is never read again, whatever became of its fact since (replaced, demoted, forgotten): learning is
idempotent, and a fact the user let go is not learned back from the file that still holds it. A file with no row
was never learned from (its first learn may only note what it holds: ``baseline``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .backend import Connection
from .database import Database
from .forgotten import digests, secret

WRITER = "learn:"  # a learned fact's writer is ``learn:HOST``
# the partial index of the births' learned writers answers it (store/agent_tables.py, learned_births)
LEARNED_SQL = "SELECT persona_id, writer FROM persona_births WHERE profile = ? AND writer LIKE 'learn:%'"


def learned_writer(host: str) -> str:
    """The writer of a fact learned from ``host``'s own memory."""
    return WRITER + host


def learned_from(conn: Connection, profile: str) -> dict[str, frozenset[str]]:
    """Host -> the keys (``p:ID``, as a render reads them) of the profile's facts learned from that host's own
    memory: a render leaves each out of its own host's targets, which load that memory already."""
    found: dict[str, set[str]] = {}
    for persona_id, writer in conn.execute(LEARNED_SQL, (profile,)):
        found.setdefault(str(writer).removeprefix(WRITER), set()).add(f"p:{int(persona_id):012d}")
    return {host: frozenset(keys) for host, keys in found.items()}


def unseen(store: Database, host: str, file: str, texts: Sequence[str]) -> tuple[list[int], bool]:
    """The indexes of ``texts`` never learned from ``file`` of ``host``, and whether the file was learned from
    before."""
    with store.read() as conn:
        found = {str(row[0]) for row in conn.execute(
            "SELECT digest FROM persona_learned WHERE profile = ? AND host = ? AND file = ?",
            (store.profile, host, file))}
        made = digests(secret(store, conn), texts=texts) if texts else []
    return [index for index, digest in enumerate(made) if digest not in found], bool(found)


def note_learned(store: Database, host: str, file: str, texts: Sequence[str]) -> None:
    """Record ``texts`` as learned from ``file`` of ``host`` (a file learned with nothing in it is noted too, by
    the hash of an empty text, so its next learn is not its first)."""
    with store.transaction() as conn:
        now = store.now()
        for digest in digests(secret(store, conn), texts=list(texts) or [""]):
            conn.execute("INSERT INTO persona_learned (profile, host, file, digest, learned_at) VALUES (?, ?, ?, ?, ?) "
                         "ON CONFLICT (profile, host, file, digest) DO NOTHING",
                         (store.profile, host, file, digest, now))


def forget_learned(store: Database) -> None:
    """Drop the profile's record (profile erase)."""
    with store.transaction() as conn:
        conn.execute("DELETE FROM persona_learned WHERE profile = ?", (store.profile,))
