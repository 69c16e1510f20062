"""The cost of scoped facts: 10k facts, half of them global and half in 20 projects, rendered for 21 targets.

The floor is the same 10k facts all global, rendered for the same 21 targets: every target then shows them all,
so the difference is what the scope filter (and ranking each group apart) costs.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from contextlib import closing
from pathlib import Path

from pipeline import PersonaStore, load_settings, run_pipeline
from pipeline.scopes import ScopeFilter
from pipeline.stages.runner import within

FACTS, PROJECTS = 10_000, 20


def _store(db: Path, scoped: bool) -> None:
    with PersonaStore(db) as store:
        store.list()  # schema
    rows = [("default", "long_term", f"topic {i % 40}", f"Fact {i} about the way things are done here.", 0.7, i % 9)
            for i in range(FACTS)]
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.executemany("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, "
                         "reinforcement_count) VALUES (?, ?, ?, ?, ?, ?)", rows)
        if scoped:  # every other fact belongs to one of the projects
            conn.execute(f"UPDATE persona_births SET scope = 'project:github.com/bench/p' || (persona_id % {PROJECTS})"
                         " WHERE persona_id % 2 = 0")


def _settings(workdir: Path):
    overrides = {"store.path": str(workdir / "m.db"), "injection.file": str(workdir / "persona.md")}
    for index in range(PROJECTS):
        overrides |= {f"targets.p{index}.path": str(workdir / f"p{index}.md"),
                      f"targets.p{index}.project": f"github.com/bench/p{index}",
                      f"targets.p{index}.scopes": ["global", "project"]}
    return load_settings(overrides=overrides)


def _render_ms(scoped: bool, repeats: int = 3) -> float:
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        _store(workdir / "m.db", scoped)
        settings = _settings(workdir)
        for _ in range(repeats):
            for path in workdir.glob("*.md"):
                path.unlink()
            with PersonaStore.from_settings(settings) as store:
                start = time.perf_counter()
                run_pipeline(settings, store=store, dry_run=True)
                times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _filter_us(repeats: int = 200) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        _store(workdir / "m.db", True)
        settings = _settings(workdir)
        from pipeline import get_counter
        from pipeline.render.model import Start
        from pipeline.stages.context import StageContext
        from pipeline.stages.extract import ExtractOptions, extract

        with PersonaStore.from_settings(settings) as store:
            facts = extract(Start(), ctx=StageContext(settings, store, get_counter("heuristic")),
                            options=ExtractOptions())
    one = ScopeFilter(True, frozenset(), frozenset({"github.com/bench/p3"}))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        within(facts, one)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def rows() -> list[tuple[str, str, str]]:
    scoped, floor = _render_ms(True), _render_ms(False)
    scale = f"{FACTS:,} facts, {PROJECTS} projects, 21 targets"
    return [("render of every target, facts scoped (dry run)", scale, f"{scoped:.0f} ms"),
            ("the same, every fact global (floor)", scale, f"{floor:.0f} ms ({scoped / floor:.2f}x)"),
            ("scope filter for one target", f"{FACTS:,} facts", f"{_filter_us():.0f} µs")]
