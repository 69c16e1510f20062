"""Print the benchmark table: pipeline time, injector cost, and budget use at 1k / 10k / 100k facts."""

from __future__ import annotations

import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

from pipeline import (
    PersonaInjector,
    PersonaStore,
    Settings,
    load_settings,
    resolve_target,
    run_pipeline,
    status_data,
    tick,
)

from .corpus import corpus
from .first_day import rows as first_day_rows
from .host_histories import rows as history_rows
from .learn import rows as learn_rows
from .meaning_cost import rows as meaning_cost_rows
from .pairs import rows as pair_rows
from .processes import print_table as print_processes
from .scopes import rows as scope_rows
from .supersede import rows as supersede_rows

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
    with closing(sqlite3.connect(db)) as conn, conn:
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


def time_render_before_refresh(facts: int, repeats: int = 20) -> tuple[float, float]:
    """(ms of a compaction's refresh when a fact was added since the last render: render it, then refresh;
    ms when nothing is due), median of ``repeats``, as the Hermes plugin and provider call it."""
    from pipeline.inject.sessions import SessionSnapshots

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        populate(workdir / "m.db", facts)
        settings = settings_in(workdir)
        with SessionSnapshots(settings, busy_timeout_ms=settings.injection.busy_timeout_ms) as snapshots:
            tick(settings, store=snapshots.store, force=True)
            snapshots.snapshot("bench")
            changed, idle = [], []
            for index in range(repeats):
                snapshots.store.add(f"Bench fact number {index}.", topic="bench")
                boundary = f"compaction {index}"
                changed.append(_seconds(lambda b=boundary: snapshots.refresh_at_compaction("bench", boundary=b)))
                idle.append(_seconds(lambda b=boundary: snapshots.refresh_at_compaction("bench", boundary=b)))
    return statistics.median(changed) * 1000, statistics.median(idle) * 1000


def _seconds(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def populate_memories(db: Path, count: int) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executemany(
            "INSERT INTO working_memory (id, content, source, importance, session_id) VALUES (?, ?, ?, ?, ?)",
            ((f"wm-{i}", f"memory {i}", "conversation", 0.5, "default") for i in range(count)))


def time_status_and_tick(memories: int) -> tuple[float, float]:
    """(status µs, no-op tick µs) with `memories` working memories and 1k persona facts, after a render."""
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


PEAK_MEMORY = """
import sys
from pipeline import run_pipeline
from pipeline import load_settings
from pipeline import PersonaStore
from pipeline import get_counter

def peak_kib():
    # VmHWM belongs to this process image; ru_maxrss would carry the parent's peak across fork and exec.
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2]})
get_counter(settings.cap.counter)
before = peak_kib()
with PersonaStore.from_settings(settings) as store:
    run_pipeline(settings, store=store)
print(before, peak_kib())
"""


FIRST_RENDERS = """
import sys, time
from pipeline import PersonaStore, get_counter, load_settings, run_pipeline

settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2]})
get_counter(settings.cap.counter)
with PersonaStore.from_settings(settings) as store:
    times = []
    for index in range(3):  # the process's first render, then two more, each after one fact was added
        store.add(f"Fact added before render {index} of this process.", topic="bench")
        start = time.perf_counter()
        run_pipeline(settings, store=store)
        times.append(time.perf_counter() - start)
print(*times)
"""


def small_renders(facts: int = 50, repeats: int = 200) -> tuple[float, float, float, float]:
    """(ms) a real persona's render + write in one process (file deleted first), its unchanged render, and in a
    new process its first render (templates compiled, nothing derived yet) and the next one after an add."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        populate(workdir / "m.db", facts)
        settings = settings_in(workdir)
        path = resolve_target(settings, "markdown").path
        with PersonaStore.from_settings(settings) as store:
            run_pipeline(settings, store=store)
            unchanged = _median_us(lambda: run_pipeline(settings, store=store), repeats) / 1000

            def written() -> None:
                path.unlink()
                run_pipeline(settings, store=store)
            write = _median_us(written, repeats) / 1000
        firsts = [subprocess.run([sys.executable, "-c", FIRST_RENDERS, str(workdir / "m.db"), str(path)],
                                 check=True, capture_output=True, text=True).stdout.split() for _ in range(5)]
    first = statistics.median(float(run[0]) for run in firsts) * 1000
    after_add = statistics.median(float(run[2]) for run in firsts) * 1000
    return write, unchanged, first, after_add


def peak_memory(facts: int = 100_000) -> tuple[float, float]:
    """(peak MB before the render, peak MB after it) of a fresh process that renders ``facts`` facts once."""
    with tempfile.TemporaryDirectory() as tmp:
        populate(Path(tmp) / "m.db", facts)
        result = subprocess.run([sys.executable, "-c", PEAK_MEMORY, str(Path(tmp) / "m.db"),
                                 str(Path(tmp) / "persona.md")], check=True, capture_output=True, text=True)
    before, peak = (int(value) / 1024 for value in result.stdout.split())
    return before, peak


def scaling_ratios(rounds: int = 5) -> list[float]:
    """Render time at 100k ÷ at 10k, once per round; each round times both sizes back to back."""
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = {}
        for size in (10_000, 100_000):
            folder = Path(tmp) / str(size)
            folder.mkdir()
            populate(folder / "m.db", size)
            settings[size] = settings_in(folder)
        for _ in range(rounds):
            small, big = (time_pipeline(settings[size])[0] for size in (10_000, 100_000))
            ratios.append(big / small)
    return ratios


def budget_use(topics: tuple[int, int], renders: int = 60) -> tuple[float, float, float]:
    """(share within budget, median and min budget use of renders that overflowed), o200k, budget 1500.

    Each render draws 20-1,500 multilingual facts over a number of topics in ``topics``.
    """
    rng = random.Random(20261130 + topics[0])
    within, used = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for index in range(renders):
            folder = Path(tmp) / str(index)
            folder.mkdir()
            settings = settings_in(folder)
            with PersonaStore.from_settings(settings) as store, store.transaction() as conn:
                conn.executemany("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) "
                                 "VALUES ('default', 'long_term', ?, ?, 0.7)",
                                 corpus(rng, rng.randrange(20, 1500), rng.randrange(*topics)))
            with PersonaStore.from_settings(settings) as store:
                report = run_pipeline(settings, store=store, dry_run=True)[0]
            within += report.tokens <= report.budget
            if report.fitted_out or report.sections_dropped:
                used.append(report.tokens / report.budget)
    return within / renders, statistics.median(used), min(used)


def main() -> None:
    rows: list[tuple[str, str, str]] = []
    write, unchanged, first, after_add = small_renders()
    rows += [("render + write (file deleted first), one process", "50 facts", f"{write:.2f} ms"),
             ("render, file unchanged, one process", "50 facts", f"{unchanged:.2f} ms"),
             ("a new process's first render + write (templates compiled)", "51 facts", f"{first:.1f} ms"),
             ("the same process's third render, a fact added before it", "53 facts", f"{after_add:.2f} ms")]
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
    for facts in (1_000, 10_000):
        changed, idle = time_render_before_refresh(facts)
        rows += [("compaction refresh, a fact added since the last render (render + refresh)",
                  f"{facts:,} facts", f"{changed:.1f} ms"),
                 ("compaction refresh, nothing due", f"{facts:,} facts", f"{idle:.2f} ms")]
    for memories in (10_000, 100_000):
        status_us, tick_us = time_status_and_tick(memories)
        scale = f"{memories:,} memories"
        rows += [("persona status", scale, f"{status_us:.0f} µs"), ("persona tick, nothing to do", scale,
                                                                   f"{tick_us / 1000:.1f} ms")]
    before, peak = peak_memory()
    rows.append(("peak memory, one render", "100,000 facts", f"{peak:.0f} MB ({peak - before:.0f} MB above the "
                                                               f"{before:.0f} MB before it)"))
    ratios = scaling_ratios()
    rows.append(("render time ratio, per round", "10k → 100k facts, 5 rounds",
                 f"{min(ratios):.1f} min, {statistics.median(ratios):.1f} median, {max(ratios):.1f} max"))
    for label, topics in (("3-8 topics", (3, 9)), ("20-60 topics", (20, 61))):
        within, median, lowest = budget_use(topics)
        rows.append(("budget use when content overflows", label,
                     f"{median:.1%} median, {lowest:.1%} min; {within:.0%} within budget"))
    rows += supersede_rows()
    rows += pair_rows()
    rows += first_day_rows()
    rows += meaning_cost_rows()
    rows += scope_rows()
    rows += history_rows()
    rows += learn_rows()
    print(f"persona-tier benchmarks: {platform.machine()}, Python {sys.version.split()[0]}, "
          f"SQLite {sqlite3.sqlite_version}")
    print()
    print("| figure | scale | value |")
    print("| --- | --- | ---: |")
    for figure, scale, value in rows:
        print(f"| {figure} | {scale} | {value} |")
    print()
    print_processes(None)  # the existing tier's rows need its own venv: make bench-compare


if __name__ == "__main__":
    main()
