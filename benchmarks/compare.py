"""`make bench-compare`: persona-tier and the existing tier (mnemosyne-memory 3.15.1), side by side.

The existing tier runs in its own venv (benchmarks/existing_tier.py) as a
long-lived process that answers one sample at a time, so every figure is
measured interleaved: one sample of ours, one of theirs, again and again, and
the medians compared. Both feel the same machine at the same moments.
Every output of both is checked with the exact o200k counter, and a wrong
output is marked rather than credited as a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from pipeline import (
    PersonaInjector,
    PersonaStore,
    Settings,
    evaluate,
    get_counter,
    import_facts,
    resolve_target,
    run_pipeline,
)
from pipeline.fs.write import fsync_dir
from pipeline.inject import capped as block
from pipeline.render.section_cap import split_sections

from . import promote_scale
from .__main__ import SIZES, populate, populate_memories, settings_in
from .corpus import corpus
from .processes import print_table as print_processes

CAP = 1500
O200K = get_counter("o200k_base")
ROUNDS = {"render": 7, "small": 200, "inject": 300, "trigger": 300, "promote": 200}
SMALL = 50  # a real persona: tens to hundreds of facts
RENDER_SIZES = (SMALL, *SIZES)
TRIGGER_MEMORIES = (1_000, 10_000, 100_000)


class Theirs:
    """The existing tier's process: one request per line in, one answer per line out."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen([python, str(Path(__file__).with_name("existing_tier.py"))],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, op: str, *args: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, "args": list(args)}) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


def interleaved(rounds: int, ours: Any, theirs: Any, floor: Any = None) -> tuple[float, float, Any, Any]:
    """Median ns of ``rounds`` alternating samples; each callable returns (ns, output).

    With ``floor``, a third sample joins each round and its median is returned as the last output.
    """
    mine, other, lowest, last_mine, last_other = [], [], [], None, None
    for _ in range(rounds):
        ns, last_mine = ours()
        mine.append(ns)
        ns, last_other = theirs()
        other.append(ns)
        if floor is not None:
            lowest.append(floor())
    if floor is not None:
        last_other = (last_other, statistics.median(lowest))
    return statistics.median(mine), statistics.median(other), last_mine, last_other


def timed(call: Any) -> tuple[int, Any]:
    start = time.perf_counter_ns()
    output = call()
    return time.perf_counter_ns() - start, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--existing-python", required=True, help="python of a venv with mnemosyne-memory==3.15.1")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="persona-compare-"))
    try:
        job, ours = prepare(work)
        theirs = Theirs(args.existing_python)
        theirs.ask("setup", job)
        floors: list[tuple] = []
        rows = (render_rows(ours, theirs, floors) + inject_rows(ours, theirs, job) + trigger_rows(ours, theirs)
                + promote_rows(ours, theirs, floors))
        theirs.close()
        floors += promote_scale.rows()  # promote beside one FULL commit of the same row, 1,000 and 100,000 facts
        print_table(rows)
        print_floors(floors)
        print_fidelity(work)
        print()
        print_processes(args.existing_python)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def prepare(work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each side gets its own copy of the same data."""
    ours: dict[str, Any] = {"render": {}, "triggers": {}}
    job: dict[str, Any] = {"workdir": str(work), "cap": CAP, "render_dbs": {}, "trigger_dbs": {}}
    for size in RENDER_SIZES:
        folder = work / f"render-{size}"
        folder.mkdir()
        populate(folder / "m.db", size)
        copy_db(folder / "m.db", work / f"theirs-{size}.db")
        ours["render"][size] = settings_in(folder)
        job["render_dbs"][size] = str(work / f"theirs-{size}.db")
    capped = ours["render"][SIZES[0]]
    with PersonaStore.from_settings(capped) as store:
        run_pipeline(capped, store=store)
    ours["capped_file"] = resolve_target(capped, "markdown").path
    ours["big_file"] = _uncapped_file(work, SIZES[0])
    job["inject_file"] = str(ours["capped_file"])
    for memories in TRIGGER_MEMORIES:
        ours["triggers"][memories], job["trigger_dbs"][memories] = _trigger_store(work, memories)
    job["trigger_file"] = str(work / "existing-persona.md")
    Path(job["trigger_file"]).write_text("# Persona\n\n## style\n\n- Answers tersely.\n")
    ours["promote"] = _promote_stores(work)
    job.update(promote_db=ours["promote"]["promote_db"], memory_ids=ours["promote"]["memory_ids"])
    return job, ours


def copy_db(source: Path, destination: Path) -> None:
    """A consistent copy, WAL included (a plain file copy can miss committed rows still in the WAL)."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(destination)) as dst:
        src.backup(dst)


def _uncapped_file(work: Path, size: int) -> Path:
    """A large hand-made persona file: every section, no cap (599 lines at 1k facts)."""
    folder = work / "inject"
    folder.mkdir()
    settings = settings_in(folder)
    big = settings.model_copy(update={"cap": settings.cap.model_copy(update={"token_cap": 1_000_000})})
    copy_db(work / f"render-{size}" / "m.db", folder / "m.db")
    with PersonaStore.from_settings(big) as store:
        run_pipeline(big, store=store)
    return resolve_target(big, "markdown").path


def _trigger_store(work: Path, memories: int) -> tuple[Settings, str]:
    """1k real facts, rendered once, then ``memories`` new working memories: the interval trigger must fire."""
    folder = work / f"triggers-{memories}"
    folder.mkdir()
    populate(folder / "m.db", 1_000)
    settings = settings_in(folder)
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)
    populate_memories(folder / "m.db", memories)
    copy_db(folder / "m.db", work / f"theirs-triggers-{memories}.db")
    return settings, str(work / f"theirs-triggers-{memories}.db")


def _promote_stores(work: Path) -> dict[str, Any]:
    folder = work / "promote"
    folder.mkdir()
    count = 10_000 + 2 * ROUNDS["promote"] + 10
    for name in ("ours.db", "theirs.db", "floor.db"):
        PersonaStore(folder / name).open()
        populate_memories(folder / name, count)
    ids = [f"wm-{i}" for i in range(count)]
    facts = folder / "facts.yaml"
    facts.write_text("facts:\n" + "".join(f"  - {{topic: topic {i % 40}, content: 'imported fact {i}'}}\n"
                                          for i in range(10_000)))
    return {"promote_db": str(folder / "theirs.db"), "memory_ids": ids, "ours_db": str(folder / "ours.db"),
            "floor_db": str(folder / "floor.db"), "facts": str(facts)}


def render_rows(ours: dict[str, Any], theirs: Theirs, floors: list[tuple]) -> list[tuple]:
    """One row per size (the file deleted first, so ours writes as theirs always does), and at 50 facts a
    row with the file already right; the 50-fact rows also measure the floor in the same rounds."""
    rows = []
    for size in RENDER_SIZES:
        for unchanged in (False, True) if size in (SMALL, SIZES[0]) else (False,):
            rows.append(_render_row(ours["render"][size], theirs, size, unchanged, floors))
    rows.append(_edited_row(ours["render"][SIZES[0]], theirs, SIZES[0], floors))
    return rows


def _edited_row(settings: Settings, theirs: Theirs, size: int, floors: list[tuple]) -> tuple:
    """``size`` facts, the text of one fact the persona shows edited by another tool before each render: the
    selection changes, so the fit runs again (#40)."""
    path, edits = resolve_target(settings, "markdown").path, iter(range(10**9))
    with PersonaStore.from_settings(settings) as store, closing(sqlite3.connect(store.path)) as conn:
        shown = run_pipeline(settings, store=store)[0].text
        victim, text = next((id_, content) for id_, content in conn.execute(
            "SELECT id, content FROM memoria_persona ORDER BY id") if content in shown)

        def mine() -> tuple:
            with conn:
                conn.execute("UPDATE memoria_persona SET content = ? WHERE id = ?", (f"{text} ({next(edits)})", victim))
            path.unlink(missing_ok=True)
            return timed(lambda: run_pipeline(settings, store=store)[0])

        def other() -> tuple:
            answer = theirs.ask("render", size)
            return answer["ns"], answer["text"]

        floor = Floor(store.path, write=True, fit=CAP)
        my_ns, their_ns, report, (_, floor_ns) = interleaved(ROUNDS["render"] * 3, mine, other, floor)
    label = f"render + write, {size // 1000}k facts, a shown fact edited before each"
    floors.append((label, my_ns, floor_ns, floor.what))
    return (label, my_ns / 1e6, their_ns / 1e6, "ms", f"{report.fitted_out} fitted out; the fit made again", "")


def _render_row(settings: Settings, theirs: Theirs, size: int, unchanged: bool, floors: list[tuple]) -> tuple:
    path = resolve_target(settings, "markdown").path
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)

        def mine() -> tuple:
            if not unchanged:
                path.unlink(missing_ok=True)  # ours skips an unchanged file; the existing tier always writes
            return timed(lambda: run_pipeline(settings, store=store)[0])

        def other() -> tuple:
            answer = theirs.ask("render", size)
            return answer["ns"], answer["text"]

        floor = Floor(store.path, write=not unchanged) if size == SMALL else None
        my_ns, their_ns, report, their_text = interleaved(ROUNDS["small" if size == SMALL else "render"], mine,
                                                          other, floor)
    if floor is not None:
        their_text, floor_ns = their_text
        floors.append((_render_label(size, unchanged), my_ns, floor_ns, floor.what))
    my_tokens, my_sections = _checks(report.text)
    their_tokens, their_sections = _checks(their_text)
    verdict = []
    if their_tokens > CAP:
        verdict.append(f"over budget: {their_tokens} > {CAP} tokens")
    if their_sections <= 1 and size > SMALL:
        verdict.append(f"persona nearly empty: {their_sections} section(s)")
    mine_note = f"{my_sections} sections, {my_tokens} tokens, {report.fitted_out} fitted out"
    if unchanged:
        mine_note += f"; {'unchanged, not written' if not report.written else 'written'}"
    return (_render_label(size, unchanged), my_ns / 1e6, their_ns / 1e6, "ms", mine_note,
            "; ".join(verdict) or f"{their_sections} sections, {their_tokens} tokens" + ("; always written"
                                                                                         if unchanged else ""))


def _render_label(size: int, unchanged: bool) -> str:
    count = f"{size} facts" if size < 1000 else f"{size // 1000}k facts"
    return f"render, {count}, file unchanged" if unchanged else f"render + write, {count}"


class Floor:
    """What any render of this store must pay, done as plainly as Python can: one SELECT of the profile's
    facts, one exact count of their text, (when writing) an fsynced write and rename of a file with its directory
    fsynced (the same fsyncs as ours: a rename is durable only then), and one durable commit (SQLite's default
    synchronous=FULL, as ours and theirs run)."""

    def __init__(self, db: Path | None, *, write: bool, fit: int | None = None) -> None:
        assert db is not None
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (at TEXT)")
        self.write, self.fit, self.out = write, fit, db.with_name("floor.md")
        counting = "an exact count of each fact, a greedy fit to the budget" if fit else "one exact count"
        self.what = (f"a SELECT, {counting}, an fsynced write and rename, one durable commit" if write
                     else f"a SELECT, {counting}, one durable commit")

    def __call__(self) -> int:
        start = time.perf_counter_ns()
        rows = self.conn.execute("SELECT topic, content FROM memoria_persona WHERE session_id = ?",
                                 ("default",)).fetchall()
        lines = [f"- {content}\n" for _, content in rows]
        if self.fit is None:
            text = "".join(lines)
            O200K.count(text)
        else:
            text = "".join(_greedy_fit(lines, O200K.count_many(lines), self.fit))
        if self.write:
            temp = self.out.with_name(".floor.tmp")
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, text.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.out)
            fsync_dir(self.out.parent)  # the rename made durable, as every atomic write of ours does
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("INSERT INTO bench_floor VALUES ('x')")
        self.conn.execute("COMMIT")
        return time.perf_counter_ns() - start


def _greedy_fit(lines: list[str], counts: list[int], budget: int) -> list[str]:
    """The budget-fit floor's choice: each line in turn while it still fits (no sections, no fairness)."""
    kept, used = [], 0
    for line, count in zip(lines, counts, strict=True):
        if used + count <= budget:
            kept.append(line)
            used += count
    return kept


def print_floors(floors: list[tuple]) -> None:
    print()
    print("| figure | persona-tier | floor | persona-tier ÷ floor | the floor |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, mine, floor, what in floors:
        print(f"| {name} | {_fmt(mine / 1e6)} ms | {_fmt(floor / 1e6)} ms | {mine / floor:.2f} | {what} |")


def inject_rows(ours: dict[str, Any], theirs: Theirs, job: dict[str, Any]) -> list[tuple]:
    settings = ours["render"][SIZES[0]].model_copy(deep=True)
    settings = settings.model_copy(update={"injection": settings.injection.model_copy(update={"enabled": True})})
    rows = []
    for label, path, cold in (("cold injection, already-capped file", ours["capped_file"], False),
                                ("cold injection, over-cap file", ours["big_file"], False),
                                ("cold injection, over-cap file never seen before", ours["big_file"], True)):
        local = settings.model_copy(update={"injection": settings.injection.model_copy(update={"file": path})})

        def mine(local: Settings = local, cold: bool = cold) -> tuple:
            if cold:
                block.clear_memo()
            injector = PersonaInjector(local)
            return timed(injector.block)

        def other(path: Path = path) -> tuple:
            answer = theirs.ask("inject_cold", str(path))
            return answer["ns"], answer["block"]

        my_ns, their_ns, my_block, their_block = interleaved(ROUNDS["inject"], mine, other)
        lines_in = path.read_text().count("\n")
        bad = their_block.count("\n") < lines_in // 2 or O200K.count(their_block) > CAP
        their_note = (f"newlines destroyed: {lines_in} lines in, {their_block.count(chr(10)) + 1} out; "
                      f"{O200K.count(their_block)} tokens") if bad else "ok"
        rows.append((label, my_ns / 1e3, their_ns / 1e3, "µs",
                     f"{O200K.count(my_block)} tokens, cut at section boundaries", their_note))
    warm = PersonaInjector(settings)
    warm.block()

    def mine_warm() -> tuple:
        calls = 100_000
        block_call = warm.block
        start = time.perf_counter_ns()
        for _ in range(calls):
            block_call()
        return (time.perf_counter_ns() - start) / calls, None

    my_ns, their_ns, _, _ = interleaved(9, mine_warm, lambda: (theirs.ask("inject_warm", 100_000)["ns"], None))
    rows.append(("warm injection", my_ns / 1e3, their_ns / 1e3, "µs", "no syscall", "two stat calls per call"))
    return rows


def trigger_rows(ours: dict[str, Any], theirs: Theirs) -> list[tuple]:
    rows = []
    for memories in TRIGGER_MEMORIES:
        settings = ours["triggers"][memories]
        with PersonaStore.from_settings(settings) as store:
            def mine(store: PersonaStore = store, settings: Settings = settings) -> tuple:
                return timed(lambda: {t.name: t.fired for t in evaluate(settings, store)})

            def other(memories: int = memories) -> tuple:
                answer = theirs.ask("trigger", memories)
                return answer["ns"], answer["result"]

            my_ns, their_ns, fired, result = interleaved(ROUNDS["trigger"], mine, other)
        should = result["should"] if isinstance(result, dict) else bool(result)
        rows.append((f"trigger check, {memories // 1000}k memories", my_ns / 1e3, their_ns / 1e3, "µs",
                     f"7 triggers; interval fired: {fired['interval']}",
                     "fired" if should else f"wrong: did not fire for {memories:,} new memories"))
    return rows


class PromoteFloor:
    """One FULL commit of the same row into ``memoria_persona``: the memory's text copied in one INSERT, in WAL
    mode with SQLite's default ``synchronous=FULL``, as durable as our promote and the existing tier's."""

    what = "one INSERT of the memory's row into memoria_persona, one durable commit"

    def __init__(self, db: str, ids: list[str]) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.ids = iter(ids)

    def __call__(self) -> int:
        start = time.perf_counter_ns()
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) SELECT "
                          "'default', 'working', 'general', content, importance FROM working_memory WHERE id = ?",
                          (next(self.ids),))
        self.conn.execute("COMMIT")
        return time.perf_counter_ns() - start


def promote_rows(ours: dict[str, Any], theirs: Theirs, floors: list[tuple]) -> list[tuple]:
    job = ours["promote"]
    ids = iter(job["memory_ids"])  # each side promotes the same memories, in its own database
    floor = PromoteFloor(job["floor_db"], job["memory_ids"])
    with PersonaStore(Path(job["ours_db"])) as store:
        my_ns, their_ns, _, (_, floor_ns) = interleaved(
            ROUNDS["promote"], lambda: (timed(lambda: store.promote(next(ids)))[0], None),
            lambda: (theirs.ask("promote_one")["ns"], None), floor)
        floors.append(("promote one fact", my_ns, floor_ns, floor.what))
        again = store.promote(job["memory_ids"][0])
        rows = [("promote one fact", my_ns / 1e3, their_ns / 1e3, "µs",
                 f"promote twice: {1 if not again.created else 2} row", "")]
        import_ns, report = timed(lambda: import_facts(store, Path(job["facts"])))
    bulk = theirs.ask("promote_bulk", 10_000)
    twice = bulk["promote_twice_rows"]
    rows[0] = (*rows[0][:5], f"wrong: promote twice made {twice} rows" if twice != 1 else "promote twice: 1 row")
    rows.append(("10k facts: import vs 10k promotes", import_ns / 1e9, bulk["ns"] / 1e9, "s",
                 f"{len(report.added)} facts, one transaction", f"{bulk['count']} facts, one commit each"))
    return rows


def _checks(text: str) -> tuple[int, int]:
    """(o200k tokens, sections) of a markdown persona."""
    return O200K.count(text), len(split_sections(text, "## ").sections)


def print_table(rows: list[tuple]) -> None:
    print("| figure | persona-tier | existing 3.15.1 | ratio (theirs ÷ ours) | persona-tier output | existing output |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    for name, mine, other, unit, my_note, their_note in rows:
        print(f"| {name} | {_fmt(mine)} {unit} | {_fmt(other)} {unit} | {other / mine:.2f} | {my_note} | "
              f"{their_note} |")


def _fmt(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def print_fidelity(work: Path, renders: int = 100) -> None:
    """Share of renders within budget (exact o200k), and budget use when content overflows."""
    rng = random.Random(20261130)
    within, used = 0, []
    for index in range(renders):
        folder = work / f"fidelity-{index}"
        folder.mkdir()
        settings = settings_in(folder)
        PersonaStore.from_settings(settings).open()
        with sqlite3.connect(folder / "m.db") as conn:
            conn.executemany("INSERT INTO memoria_persona (tier, topic, content, confidence) "
                             "VALUES ('long_term', ?, ?, 0.7)", corpus(rng, rng.randrange(20, 1500),
                                                                       rng.randrange(3, 60)))
        with PersonaStore.from_settings(settings) as store:
            report = run_pipeline(settings, store=store, dry_run=True)[0]
        tokens = O200K.count(report.text)
        within += tokens <= CAP
        if report.fitted_out or report.sections_dropped:
            used.append(tokens / CAP)
        shutil.rmtree(folder)
    print()
    print(f"budget fidelity over {renders} multilingual renders (o200k, budget {CAP}): "
          f"{within / renders:.0%} within budget; {len(used)} overflowed, budget use median "
          f"{statistics.median(used):.1%}, min {min(used):.1%}")


if __name__ == "__main__":
    main()
