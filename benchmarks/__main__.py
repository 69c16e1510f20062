"""Print the benchmark table: pipeline time, injector cost, and budget use at 1k / 10k / 100k facts."""

from __future__ import annotations

import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pipeline.injector import PersonaInjector
from pipeline.runner import run_pipeline
from pipeline.settings import Settings, load_settings
from pipeline.store import PersonaStore

SIZES = (1_000, 10_000, 100_000)
TOPICS = 40
PHRASES = (
    "Answers tersely and skips the preamble",
    "Uses uv for Python, never pip",
    "Never force-push a shared branch",
    "用中文回答技术问题，代码注释用英文",
    "日本語のドキュメントは丁寧語で書く",
    "Prefers 🎉 emoji only in chat, never in commits",
    "Schreibt Commit-Nachrichten auf Englisch",
)


def populate(db: Path, count: int) -> None:
    """Bulk-load facts straight into memoria_persona, as a large existing store would hold them."""
    with PersonaStore(db) as store:
        store.list()  # schema
    rows = [
        ("default", ("permanent", "long_term", "working")[i % 3], f"topic {i % TOPICS}",
         f"{PHRASES[i % len(PHRASES)]} (variant {i})", 0.5 + (i % 50) / 100, i % 17)
        for i in range(count)
    ]
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, reinforcement_count) "
            "VALUES (?, ?, ?, ?, ?, ?)", rows)


def settings_in(workdir: Path) -> Settings:
    return load_settings(overrides={
        "store.path": str(workdir / "m.db"), "injection.file": str(workdir / "persona.md"),
        "injection.enabled": True,
    })


def time_pipeline(settings: Settings, repeats: int = 3) -> tuple[float, int, int]:
    """Median seconds of a full render (extract → write), with tokens used and the budget."""
    times, report = [], None
    for _ in range(repeats):
        with PersonaStore.from_settings(settings) as store:
            start = time.perf_counter()
            report = run_pipeline(settings, store=store)[0]
            times.append(time.perf_counter() - start)
    assert report is not None
    return statistics.median(times), report.tokens, report.budget


def time_injector(settings: Settings) -> tuple[float, float]:
    """(cold µs per call: new injector, stat + read + cap; warm µs per call)."""
    cold = []
    for _ in range(50):
        injector = PersonaInjector(settings)
        start = time.perf_counter_ns()
        injector.block()
        cold.append(time.perf_counter_ns() - start)
    return statistics.median(cold) / 1000, warm_us(PersonaInjector(settings))


def warm_us(injector: PersonaInjector, calls: int = 1_000_000) -> float:
    """µs per block() call once the injector is warm."""
    block = injector.block
    block()
    start = time.perf_counter_ns()
    for _ in range(calls):
        block()
    return (time.perf_counter_ns() - start) / calls / 1000


def time_sessions(settings: Settings) -> tuple[float, float]:
    """(session-mode warm block() µs per call, no-op refresh_at_compaction µs per call)."""
    session_settings = settings.model_copy(
        update={"injection": settings.injection.model_copy(update={"mode": "session"})})
    injector = PersonaInjector(session_settings, session_id="bench")
    warm = warm_us(injector)
    snapshots = injector.sessions()
    refreshes = 500
    start = time.perf_counter_ns()
    for _ in range(refreshes):
        snapshots.refresh_at_compaction("bench")
    noop = (time.perf_counter_ns() - start) / refreshes / 1000
    injector.close()
    return warm, noop


def populate_memories(db: Path, count: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.executemany(
            "INSERT INTO working_memory (id, content, source, importance, session_id) VALUES (?, ?, ?, ?, ?)",
            ((f"wm-{i}", f"memory {i}", "conversation", 0.5, "default") for i in range(count)))


def time_status_and_tick(memories: int) -> tuple[float, float]:
    """(status µs, no-op tick µs) with `memories` working memories and 1k persona facts, after a render."""
    from pipeline.cli.tick_cmds import status_data
    from pipeline.ticking import tick

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        populate(workdir / "m.db", 1_000)
        settings = settings_in(workdir)
        with PersonaStore.from_settings(settings) as store:
            tick(settings, store=store, force=True)
            populate_memories(workdir / "m.db", memories)
            tick(settings, store=store)  # the interval trigger fires once for the new memories
            status_us = _median_us(lambda: status_data(settings, store), 200)
            tick_us = _median_us(lambda: tick(settings, store=store), 100)
    return status_us, tick_us


def _median_us(call, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def main() -> None:
    rows: list[tuple[str, str, str]] = []
    pipeline_times = {}
    for size in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            workdir = Path(tmp)
            populate(workdir / "m.db", size)
            settings = settings_in(workdir)
            seconds, tokens, budget = time_pipeline(settings)
            cold_us, warm = time_injector(settings)
            if size == SIZES[0]:
                session_warm, session_noop = time_sessions(settings)
        pipeline_times[size] = seconds
        scale = f"{size:,} facts"
        rows += [("full pipeline (extract → write)", scale, f"{seconds * 1000:.1f} ms"),
                 ("injection, cold call", scale, f"{cold_us:.1f} µs"),
                 ("injection, warm call", scale, f"{warm:.3f} µs"),
                 ("tokens used / budget", scale, f"{tokens} / {budget}")]
    rows.append(("pipeline time ratio", "10k → 100k facts", f"{pipeline_times[100_000] / pipeline_times[10_000]:.1f}"))
    rows += [("session mode: warm block()", "per call", f"{session_warm:.3f} µs"),
             ("session mode: no-op refresh_at_compaction", "per call", f"{session_noop:.1f} µs")]
    for memories in (10_000, 100_000):
        status_us, tick_us = time_status_and_tick(memories)
        scale = f"{memories:,} memories"
        rows += [("persona status", scale, f"{status_us:.0f} µs"), ("persona tick, nothing to do", scale,
                                                                   f"{tick_us / 1000:.1f} ms")]
    print(f"persona-tier benchmarks: {platform.machine()}, Python {sys.version.split()[0]}, "
          f"SQLite {sqlite3.sqlite_version}")
    print()
    print("| figure | scale | value |")
    print("| --- | --- | ---: |")
    for figure, scale, value in rows:
        print(f"| {figure} | {scale} | {value} |")


if __name__ == "__main__":
    main()
