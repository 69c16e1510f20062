"""Taking a text out of a host's own SQLite database (Codex's copies of its threads), in place, with SQL.

Only the text columns the host's module names change (plain text, or JSON in the host's record format, whose text
fields alone are edited); every other column, and every row without the text, stays as it was. The rows are read
first without a lock; the changes are made in one transaction, with ``secure_delete`` on so the old text leaves the
freed space, and the write-ahead log is checkpointed and emptied after it. A database another process holds open
(the host running) is not touched: the caller names it, and the journal finishes it later. Byte offsets the host
keeps into a history file the scrub shortened move with the file.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .json_probe import Probe
from .json_scrub import Held, Scrubbed
from .json_text import Roles, edits, parse
from .text_find import MARKER, Finder

BUSY_MS = 2_000  # how long a write waits for the host's own lock before the database is left
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
Shift = Callable[[int], int]


class Table(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def text(self) -> tuple[str, ...]: ...
    @property
    def json(self) -> tuple[str, ...]: ...


class Offsets(Protocol):
    @property
    def table(self) -> str: ...
    @property
    def offsets(self) -> tuple[str, ...]: ...
    @property
    def key_column(self) -> str: ...


class Database(Protocol):
    """A host's database as its module declares it (``HistoryDatabase``)."""

    @property
    def file(self) -> str: ...
    @property
    def tables(self) -> Sequence[Table]: ...
    @property
    def offsets(self) -> Sequence[Offsets]: ...


@dataclass
class _Plan:
    updates: list[tuple[str, str, int, str]] = field(default_factory=list)  # table, column, rowid, new value
    replaced: int = 0
    short: bool = False


def file_key(path: Path) -> str | None:
    """The id a history file's name ends with (a Codex rollout's thread id), which its database rows carry."""
    match = _UUID.search(path.stem)
    return match.group(0) if match else None


def scrub_database(path: Path, database: Database, probe: Probe, finder: Finder, roles: Roles, *,
                   dry_run: bool = False, held: Held | None = None, moved: Mapping[str, Shift] | None = None
                   ) -> Scrubbed | None:
    """Replace the texts in a host's SQLite database at ``path``; None when it holds none and no offset moves.
    ``moved``: file id -> how its byte offsets move (its history file was scrubbed in this run)."""
    try:
        plan = _plan(path, database, probe, finder, roles)
    except sqlite3.Error as error:
        return Scrubbed(path, reason=f"it cannot be read as a SQLite database: {error}", retry=True)
    shifts = dict(moved or {})
    if not plan.updates and not shifts:
        return Scrubbed(path, short=True) if plan.short else None
    if dry_run:
        return Scrubbed(path, plan.replaced, short=plan.short) if plan.updates else None
    holder = _holder(path, held)
    if holder is not None:
        return Scrubbed(path, reason=f"a running process (pid {holder}) holds it open (the host is running); "
                                     "`persona scrub` finishes it once the host has quit", retry=True)
    try:
        _apply(path, database, plan, shifts)
    except sqlite3.Error as error:
        return Scrubbed(path, reason=f"it could not be changed ({error}); `persona scrub` tries again", retry=True)
    return Scrubbed(path, plan.replaced, short=plan.short) if plan.updates or plan.short else None


def _plan(path: Path, database: Database, probe: Probe, finder: Finder, roles: Roles) -> _Plan:
    plan = _Plan()
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
        for table in database.tables:
            columns = _columns(conn, table.name)
            for column in [*table.text, *table.json]:
                if column in columns:
                    _plan_column(conn, table.name, column, column in table.json, (probe, finder, roles), plan)
    return plan


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))}


def _plan_column(conn: sqlite3.Connection, table: str, column: str, is_json: bool,
                 how: tuple[Probe, Finder, Roles], plan: _Plan) -> None:
    probe, finder, roles = how
    for rowid, value in conn.execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE typeof("{column}") = ?',
                                     ("text",)):
        if not probe.may_hold(value.encode("utf-8", "surrogatepass")):
            continue
        new, count, short = _scrubbed(value, is_json, finder, roles)
        plan.short |= short
        if count:
            plan.updates.append((table, column, int(rowid), new))
            plan.replaced += count


def _scrubbed(value: str, is_json: bool, finder: Finder, roles: Roles) -> tuple[str, int, bool]:
    if is_json:
        try:
            found = edits(value, parse(value), roles, finder)
        except (ValueError, RecursionError):
            is_json = False
        else:
            return found.applied(value), len(found.spans), found.short_left
    spans = finder.find(value, message=True)
    new, at = [], 0
    for start, end in spans.spans:
        new += [value[at:start], MARKER]
        at = end
    return "".join(new) + value[at:], len(spans.spans), spans.short_left


def _holder(path: Path, held: Held | None) -> int | None:
    if held is None:
        return None
    files = held()
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(OSError):
            info = name.stat()
            if (info.st_dev, info.st_ino) in files:
                return files[(info.st_dev, info.st_ino)]
    return None


def _apply(path: Path, database: Database, plan: _Plan, shifts: dict[str, Shift]) -> None:
    """The updates and the moved offsets in one transaction, then the write-ahead log emptied."""
    with contextlib.closing(sqlite3.connect(path, timeout=BUSY_MS / 1000, isolation_level=None)) as conn:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table, column, rowid, value in plan.updates:
                conn.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (value, rowid))
            for index in database.offsets:
                _move(conn, index, shifts)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy and busy[0]:
            raise sqlite3.OperationalError("a reader kept its write-ahead log from being emptied")


def _move(conn: sqlite3.Connection, index: Offsets, shifts: dict[str, Shift]) -> None:
    columns = [column for column in index.offsets if column in _columns(conn, index.table)]
    if not columns or index.key_column not in _columns(conn, index.table):
        return
    for key, shift in shifts.items():
        for row in _rows(conn, index, columns, key):
            rowid, values = row[0], row[1:]
            moved = [shift(value) if isinstance(value, int) else value for value in values]
            if moved != list(values):
                sets = ", ".join(f'"{column}" = ?' for column in columns)
                conn.execute(f'UPDATE "{index.table}" SET {sets} WHERE rowid = ?', (*moved, rowid))


def _rows(conn: sqlite3.Connection, index: Offsets, columns: list[str], key: str) -> Iterator[tuple[Any, ...]]:
    listed = ", ".join(f'"{column}"' for column in columns)
    yield from conn.execute(f'SELECT rowid, {listed} FROM "{index.table}" WHERE "{index.key_column}" = ?', (key,))
