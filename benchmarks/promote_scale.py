"""A promote beside one FULL commit of the same row, at 1,000 and 100,000 facts (issue 38: the proposal check must
not grow with its topic). Every fact is in the promoted memories' topic, worded alike, so every promote shares
stems with all of them: the worst case for the stem index, which bounds the candidates (store/stem_index.py).

``python -m benchmarks.promote_scale`` prints the rows; ``make bench-compare`` prints them among its floors.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from contextlib import closing
from pathlib import Path

from pipeline import PersonaStore

from .__main__ import populate_memories

FACTS = (1_000, 100_000)
ROUNDS = 100
WHAT = "one INSERT of the memory's row into memoria_persona, one durable commit (same database)"


def rows(facts: tuple[int, ...] = FACTS, rounds: int = ROUNDS) -> list[tuple[str, float, float, str]]:
    """(figure, promote median ns, floor median ns, what the floor is) per size."""
    found = []
    for size in facts:
        with tempfile.TemporaryDirectory() as tmp:
            found.append(_row(Path(tmp) / "m.db", size, rounds))
    return found


def _row(db: Path, size: int, rounds: int) -> tuple[str, float, float, str]:
    PersonaStore(db).open()
    populate_memories(db, 2 * rounds + 1)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executemany("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES "
                         "('default', 'long_term', 'general', ?)", ((f"memory fact {i} detail",) for i in range(size)))
    floor = _floor(db)
    ids = iter(f"wm-{i}" for i in range(2 * rounds + 1))
    mine, lowest = [], []
    with PersonaStore(db) as store:
        store.promote(next(ids))  # the index reads the facts another tool wrote: once, before the rounds
        for _ in range(rounds):
            start = time.perf_counter_ns()
            store.promote(next(ids))
            mine.append(time.perf_counter_ns() - start)
            lowest.append(floor(next(ids)))
    return (f"promote at {size:,} facts in its topic", statistics.median(mine), statistics.median(lowest), WHAT)


def _floor(db: Path):  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")

    def commit(memory_id: str) -> int:
        start = time.perf_counter_ns()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) SELECT 'default', "
                     "'working', 'general', content, importance FROM working_memory WHERE id = ?", (memory_id,))
        conn.execute("COMMIT")
        return time.perf_counter_ns() - start

    return commit


if __name__ == "__main__":
    for name, mine, floor, what in rows():
        print(f"| {name} | {mine / 1e6:.2f} ms | {floor / 1e6:.2f} ms | {mine / floor:.2f} | {what} |")
