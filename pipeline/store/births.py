"""The ``persona_births`` table: the generation each fact of a profile was born in, who wrote it, and the tombstone
it left.

The triggers on ``memoria_persona`` write a birth for every fact any tool adds
(see the schemas' ``TRIGGERS``); the earliest one stays, so a fact that left
and came back (an undone replace) keeps the generation it first appeared in.
A forget drops everything rendered from that generation on.

Who wrote a fact is stamped by persona-tier's own code, never by a model:
``cli``, ``api``, ``import:FORMAT:FILE``, ``promote:MEMORY_ID``,
``tool:HOST``, ``adopt:FILE``, ``edit``. A fact another tool wrote
(Mnemosyne's own promote, say) has a birth and no writer: :data:`ANOTHER_TOOL`.
"""

from __future__ import annotations

from collections.abc import Collection

from ..errors import InputError
from .backend import Connection

ANOTHER_TOOL = "another tool"  # a birth the triggers recorded, with no writer of ours
UNKNOWN = "unknown"  # a fact from before births were kept
STDIN = "<stdin>"  # the origin an import from standard input names
BIRTH_JOIN = "LEFT JOIN persona_births b ON b.profile = p.session_id AND b.persona_id = p.id"


def stamp(conn: Connection, profile: str, persona_id: int, writer: str, scope: str | None) -> None:
    """Who wrote the fact, and its scope (its birth, just made by the table's trigger, gets them)."""
    conn.execute("UPDATE persona_births SET writer = ?, scope = ? WHERE profile = ? AND persona_id = ?",
                 (writer, scope, profile, persona_id))


def writer_of(born: object, writer: object) -> str:
    """How a fact's writer reads: ours by name, :data:`ANOTHER_TOOL`, or :data:`UNKNOWN` (no birth)."""
    if writer is not None:
        return str(writer)
    return ANOTHER_TOOL if born is not None else UNKNOWN


def writers(conn: Connection, profile: str, ids: Collection[int] | None = None) -> dict[int, str]:
    """Who wrote each of ``ids`` (every fact of the profile with a birth, for None), as :func:`writer_of` says."""
    rows = conn.execute("SELECT persona_id, generation, writer FROM persona_births WHERE profile = ?",
                        (profile,)).fetchall()
    wanted = None if ids is None else set(ids)
    return {int(row[0]): writer_of(row[1], row[2]) for row in rows if wanted is None or int(row[0]) in wanted}


def source_files(conn: Connection, profile: str, ids: Collection[int]) -> list[str]:
    """The files the facts ``ids`` were imported or adopted from, as their writers name them
    (``import:FORMAT:FILE``, ``adopt:FILE``), each once, in id order; standard input is no file."""
    found = writers(conn, profile, ids)
    files = (_source_file(found[persona_id]) for persona_id in sorted(found))
    return list(dict.fromkeys(file for file in files if file))


def _source_file(writer: str) -> str | None:
    kind, _, rest = writer.partition(":")
    if kind == "import":
        rest = rest.partition(":")[2]  # past the format
    elif kind != "adopt":
        return None
    return rest if rest not in ("", "-", STDIN) else None


def rescope(conn: Connection, profile: str, persona_id: int, scope: str | None) -> None:
    """The fact is now of ``scope`` (an import or an edit moved it). A fact from before births gets one at
    generation 0: every snapshot may have held it, which is what a forget must assume of it."""
    if conn.execute("UPDATE persona_births SET scope = ? WHERE profile = ? AND persona_id = ?",
                    (scope, profile, persona_id)).rowcount == 0:
        conn.execute("INSERT INTO persona_births (profile, persona_id, generation, scope) VALUES (?, ?, 0, ?)",
                     (profile, persona_id, scope))


def scope_of(conn: Connection, profile: str, persona_id: int) -> str | None:
    """The fact's scope (None: global, as every fact without a birth, and every fact from before scopes, is)."""
    row = conn.execute("SELECT scope FROM persona_births WHERE profile = ? AND persona_id = ?",
                       (profile, persona_id)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def projects(conn: Connection, profile: str) -> dict[str, int]:
    """Each project the profile has facts for (current ones), with how many."""
    rows = conn.execute("SELECT b.scope, COUNT(*) FROM persona_births b JOIN memoria_persona p ON p.id = b.persona_id "
                        "AND p.session_id = b.profile WHERE b.profile = ? AND b.scope LIKE 'project:%' "
                        "GROUP BY b.scope ORDER BY b.scope", (profile,)).fetchall()
    return {str(row[0]).removeprefix("project:"): int(row[1]) for row in rows}


def move_scope(conn: Connection, profile: str, old: str, new: str) -> int:
    """Every fact of scope ``old`` is now of scope ``new`` (a project moved or renamed): its versions, its slots
    and its sessions' project too; how many facts moved. InputError, with nothing moved, when both hold a fact in
    one slot (a key): which of the two stays is the user's to say."""
    clash = [str(row[0]) for row in conn.execute(
        "SELECT key FROM persona_keys WHERE session_id = ? AND scope = ? AND key IN "
        "(SELECT key FROM persona_keys WHERE session_id = ? AND scope = ?) ORDER BY key",
        (profile, new, profile, old)).fetchall()]
    if clash:
        raise InputError(f"both projects hold a fact with key {', '.join(clash)}; replace or demote one of the two "
                         "first (`persona list --project ...`); nothing was moved")
    moved = int(conn.execute("UPDATE persona_births SET scope = ? WHERE profile = ? AND scope = ?",
                             (new, profile, old)).rowcount)
    conn.execute("UPDATE persona_keys SET scope = ? WHERE session_id = ? AND scope = ?", (new, profile, old))
    conn.execute("UPDATE persona_snapshots SET project = ? WHERE profile = ? AND project = ?",
                 (new.removeprefix("project:"), profile, old.removeprefix("project:")))
    return moved


def earliest_birth(conn: Connection, profile: str, ids: Collection[int]) -> int:
    """The first generation that held any of ``ids`` (0 when one of them was born before births were kept)."""
    if not ids:
        return 0
    rows = conn.execute(f"SELECT generation FROM persona_births WHERE profile = ? AND persona_id IN ({_marks(ids)})",
                        (profile, *sorted(ids))).fetchall()
    return min(int(row[0]) for row in rows) if len(rows) == len(ids) else 0


def link_tombstone(conn: Connection, profile: str, persona_id: int, tombstone_id: int) -> None:
    """The fact's demote left this tombstone: a forget by the fact's id finds it."""
    conn.execute("UPDATE persona_births SET tombstone = ? WHERE profile = ? AND persona_id = ?",
                 (tombstone_id, profile, persona_id))


def tombstone_of(conn: Connection, profile: str, persona_id: int) -> int | None:
    """The tombstone a demoted fact left, if its demote recorded one."""
    row = conn.execute("SELECT tombstone FROM persona_births WHERE profile = ? AND persona_id = ?",
                       (profile, persona_id)).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def delete_births(conn: Connection, profile: str, ids: Collection[int] | None) -> None:
    """Forget when the facts ``ids`` were born (every fact of the profile for None)."""
    if ids is None:
        conn.execute("DELETE FROM persona_births WHERE profile = ?", (profile,))
    elif ids:
        conn.execute(f"DELETE FROM persona_births WHERE profile = ? AND persona_id IN ({_marks(ids)})",
                     (profile, *sorted(ids)))


def _marks(ids: Collection[int]) -> str:
    return ", ".join("?" for _ in ids)


def deleted_by_us(conn: Connection, profile: str, persona_id: int) -> None:
    """After a delete of ours from memoria_persona: the fact's origin goes, and the trigger's note of a fact
    another tool deleted is taken back (we clean up after ourselves; :mod:`pipeline.store.vanished`)."""
    conn.execute("DELETE FROM persona_origins WHERE persona_id = ?", (persona_id,))
    conn.execute("DELETE FROM persona_vanished WHERE profile = ? AND persona_id = ?", (profile, persona_id))
