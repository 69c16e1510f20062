"""The ``persona_runs`` log: one row per target per render."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .backend import Connection
from .database import Database

Outcome = Literal["written", "unchanged", "stale"]


@dataclass(frozen=True, slots=True)
class RunRecord:
    target: str
    path: Path
    reason: str
    sha256: str
    tokens: int
    budget: int
    sections_kept: int
    sections_dropped: int
    generation: int
    memory_watermark: int
    outcome: Outcome
    config_hash: str | None = None
    counter: str | None = None  # the token counter ``tokens`` is exact under


@dataclass(frozen=True, slots=True)
class LastRun:
    """What the triggers compare against: the profile's newest run that rendered current data."""

    run_at: str
    generation: int
    memory_watermark: int
    config_hash: str | None


def last_run(store: Database) -> LastRun | None:
    """The profile's most recent run that rendered current data (written or found unchanged)."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT run_at, generation, memory_watermark, config_hash FROM persona_runs "
            "WHERE session_id = ? AND outcome != 'stale' ORDER BY id DESC LIMIT 1", (store.profile,)
        ).fetchone()
    return None if row is None else LastRun(*row)


def last_render(store: Database, path: Path) -> tuple[str, str] | None:
    """(sha256, profile) of the last render into ``path``, by any profile."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT sha256, session_id FROM persona_runs WHERE path = ? AND outcome != 'stale' "
            "ORDER BY id DESC LIMIT 1", (str(path),),
        ).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


def rendered_here(store: Database, path: Path, sha256: str) -> bool:
    """Whether a render of ours (any profile's) put exactly these bytes into ``path``: the file is ours."""
    with store.read() as conn:
        return conn.execute("SELECT 1 FROM persona_runs WHERE path = ? AND sha256 = ? AND outcome != 'stale' LIMIT 1",
                            (str(path), sha256)).fetchone() is not None


INSERT_COLUMNS = ("run_at, session_id, target, path, reason, sha256, tokens, budget, sections_kept, sections_dropped, "
                  "generation, memory_watermark, outcome, config_hash, counter")
INSERT = f"INSERT INTO persona_runs ({INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
# The profile's runs older than its newest ``offset`` but for each file's newest.
TRIM = ("DELETE FROM persona_runs WHERE session_id = ? AND id <= (SELECT id FROM persona_runs WHERE session_id = ? "
        "ORDER BY id DESC LIMIT 1 OFFSET {offset}) AND ({path}EXISTS (SELECT 1 FROM persona_runs AS newer WHERE "
        "newer.session_id = persona_runs.session_id AND newer.id > persona_runs.id "
        "AND newer.path = persona_runs.path))")
TRIM_AND_INSERT = (f"WITH trimmed AS ({TRIM.format(offset='? - 1', path='persona_runs.path = ? OR ')} RETURNING 1) "
                   f"{INSERT}")


def record_run(store: Database, run: RunRecord, *, keep: int = 0) -> None:
    """Record a run; with ``keep``, delete the profile's runs older than its ``keep`` newest, but for each
    file's newest run (what says the file is ours, and how new it is).

    The log would otherwise grow by a row per target per render forever (a million rows a year at
    10,000 users rendering daily). What the triggers and the stale check read is the newest runs.
    """
    values = (store.now(), store.profile, run.target, str(run.path), run.reason, run.sha256, run.tokens, run.budget,
              run.sections_kept, run.sections_dropped, run.generation, run.memory_watermark, run.outcome,
              run.config_hash, run.counter)
    with store.transaction() as conn:
        if keep and store.backend.features.round_trips:
            # One statement: the trim, in a CTE, does not see the row it is sent with, which is the newest and
            # follows every older run into its file. Each statement costs the server and the client.
            conn.execute(TRIM_AND_INSERT, (store.profile, store.profile, keep, str(run.path), *values))
            return
        conn.execute(INSERT, values)
        if keep:
            # A file's newest run is the one no newer run of the profile's into the same file follows: asked only
            # of the rows past the cut (one a render), not grouped over every run of the profile each time.
            conn.execute(TRIM.format(offset="?", path=""), (store.profile, store.profile, keep))


def newest_generation(store: Database, path: Path) -> int | None:
    """The highest generation of this profile already rendered into ``path`` (written or found unchanged).

    Only the profile's own records count, and only those it has reached: a
    generation of another profile (the file's owner changed), or one from
    before the profile's state was erased (its counter restarted), says
    nothing about whether this render is older.
    """
    with store.read() as conn:
        row = conn.execute(
            "SELECT MAX(generation) FROM persona_runs WHERE path = ? AND session_id = ? AND outcome != 'stale' "
            "AND generation <= COALESCE((SELECT generation FROM persona_state WHERE session_id = ?), 0)",
            (str(path), store.profile, store.profile),
        ).fetchone()
    return None if row[0] is None else int(row[0])


def newest_render(store: Database, path: Path) -> tuple[int, str | None] | None:
    """(generation, settings fingerprint) of this profile's newest render into ``path`` that read current data."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT generation, config_hash FROM persona_runs WHERE path = ? AND session_id = ? "
            "AND outcome != 'stale' ORDER BY id DESC LIMIT 1", (str(path), store.profile),
        ).fetchone()
    return None if row is None else (int(row[0]), row[1])


def recorded_tokens(store: Database, path: Path, sha256: str, counter: str) -> int | None:
    """The exact count under ``counter`` a render recorded for these bytes at ``path``; None if none did."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT tokens FROM persona_runs WHERE path = ? AND sha256 = ? AND counter = ? AND outcome != 'stale' "
            "ORDER BY id DESC LIMIT 1", (str(path), sha256, counter)
        ).fetchone()
    return None if row is None else int(row[0])


def last_runs(store: Database, limit: int = 10) -> list[dict[str, Any]]:
    """The profile's most recent runs, newest first."""
    with store.read() as conn:
        rows = conn.execute("SELECT * FROM persona_runs WHERE session_id = ? ORDER BY id DESC LIMIT ?",
                            (store.profile, limit)).fetchall()
    return [dict(row) for row in rows]


def paths_written_since(store: Database, generation: int) -> list[Path]:
    """Every file the profile's renders wrote from store generation ``generation`` on (blocks excluded)."""
    with store.read() as conn:
        rows = conn.execute("SELECT DISTINCT path FROM persona_runs WHERE session_id = ? AND generation >= ? AND "
                            "outcome = 'written' AND path NOT LIKE 'store:%' ORDER BY path",
                            (store.profile, generation)).fetchall()
    return [Path(str(row[0])) for row in rows]


def trim_runs(store: Database) -> int:
    """:func:`delete_profile_runs` in a transaction of its own."""
    with store.transaction() as conn:
        return delete_profile_runs(store, conn)


def delete_profile_runs(store: Database, conn: Connection) -> int:
    """Delete the profile's run records (inside the caller's transaction), but for each file's newest: a hash
    and counts, no text, and what proves the file is ours, so the render after an erase may replace it."""
    return int(conn.execute("DELETE FROM persona_runs WHERE session_id = ? AND id NOT IN (SELECT MAX(id) FROM "
                            "persona_runs WHERE session_id = ? GROUP BY path)",
                            (store.profile, store.profile)).rowcount)
