"""`make bench-compare`: the same operations on persona-tier and on the existing tier, side by side.

The existing tier (mnemosyne-memory 3.15.1) runs in its own venv through
benchmarks/existing_tier.py. Every output of both is checked with the exact
o200k counter, and a wrong output is marked instead of credited as a speed-up.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pipeline.cap import split_sections
from pipeline.importer import import_facts
from pipeline.runner import run_pipeline
from pipeline.store import PersonaStore
from pipeline.tokens import get_counter
from pipeline.triggers import evaluate

from .__main__ import SIZES, _median_us, populate, populate_memories, settings_in, time_injector, time_pipeline

CAP = 1500
O200K = get_counter("o200k_base")
LANGUAGES = {
    "en": ["Answers tersely", "Prefers concrete examples over theory", "Never force-pushes shared branches"],
    "zh": ["用中文回答技术问题", "代码注释保持英文", "喜欢简洁的解释"],
    "ja": ["日本語のドキュメントは丁寧語で書く", "会議は午前中を避ける"],
    "ar": ["يفضل الإجابات القصيرة", "يكتب التوثيق بالعربية"],
    "de": ["Schreibt Commit-Nachrichten auf Englisch", "Bevorzugt kurze Antworten"],
    "emoji": ["Uses 🎉 only in chat 🚀", "Reacts with 👍 to approvals"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--existing-python", required=True, help="python of a venv with mnemosyne-memory==3.15.1")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="persona-compare-"))
    try:
        ours, job = run_ours(work)
        theirs = json.loads(subprocess.run([args.existing_python, str(Path(__file__).with_name("existing_tier.py")),
                                            json.dumps(job)], check=True, capture_output=True, text=True).stdout)
        print_table(ours, theirs, job)
        print_fidelity(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_ours(work: Path) -> tuple[dict, dict]:
    ours: dict = {"render": {}}
    job: dict = {"workdir": str(work), "cap": CAP, "render_dbs": {}}
    for size in SIZES:
        folder = work / f"render-{size}"
        folder.mkdir()
        populate(folder / "m.db", size)
        settings = settings_in(folder)
        seconds, _, _ = time_pipeline(settings)
        ours["render"][size] = {"seconds": seconds, "text": settings.target("markdown").path.read_text()}
        job["render_dbs"][size] = str(folder / "m.db")
        if size == SIZES[0]:
            ours["inject_cold_us"], ours["inject_warm_us"] = _inject_figures(work, folder)
            job["inject_file"] = str(work / "inject" / "persona.md")
    ours["triggers"], job["trigger_db"], job["trigger_file"] = _trigger_figures(work)
    promote_figures, promote_job = _promote_figures(work)
    ours["promote"] = promote_figures
    job.update(promote_job)
    return ours, job


def _inject_figures(work: Path, source: Path) -> tuple[float, float]:
    """A large hand-made persona file (every section, no cap), injected under the default budget."""
    folder = work / "inject"
    folder.mkdir()
    settings = settings_in(folder)
    big = settings.model_copy(update={"cap": settings.cap.model_copy(update={"token_cap": 1_000_000})})
    shutil.copy(source / "m.db", folder / "m.db")
    with PersonaStore.from_settings(big) as store:
        run_pipeline(big, store=store)
    return time_injector(settings)


def _trigger_figures(work: Path) -> tuple[dict, str, str]:
    """10k new working memories since the last render: the interval trigger must fire."""
    folder = work / "triggers"
    folder.mkdir()
    settings = settings_in(folder)
    with PersonaStore.from_settings(settings) as store:
        store.list()
        run_pipeline(settings, store=store)  # an empty persona, rendered: the existing tier's blind spot
        populate_memories(folder / "m.db", 10_000)
        fired = {t.name: t.fired for t in evaluate(settings, store)}
        us = _median_us(lambda: evaluate(settings, store), 200)
    # The existing tier's own persona file: present and non-empty, so only its threshold trigger is in play.
    theirs = folder / "existing-persona.md"
    theirs.write_text("# Persona\n\n## style\n\n- Answers tersely.\n")
    return {"us": us, "interval_fired": fired["interval"]}, str(folder / "m.db"), str(theirs)


def _promote_figures(work: Path) -> tuple[dict, dict]:
    folder = work / "promote"
    folder.mkdir()
    count = 10_000 + 400
    for name in ("ours.db", "theirs.db"):
        with PersonaStore(folder / name) as store:
            store.list()
        populate_memories(folder / name, count)
    ids = [f"wm-{i}" for i in range(count)]
    with PersonaStore(folder / "ours.db") as store:
        singles = iter(ids)
        one_us = _median_us(lambda: store.promote(next(singles)), 200)
        facts = folder / "facts.yaml"
        facts.write_text("facts:\n" + "".join(f"  - {{topic: topic {i % 40}, content: 'imported fact {i}'}}\n"
                                              for i in range(10_000)))
        start = time.perf_counter()
        report = import_facts(store, facts)
        import_s = time.perf_counter() - start
        store.promote(ids[0])
        with store.read() as conn:
            rows = conn.execute("SELECT COUNT(*) FROM memoria_persona WHERE source_memory_id = ?",
                                (ids[0],)).fetchone()[0]
    figures = {"one_us": one_us, "bulk_s": import_s, "bulk_n": len(report.added), "promote_twice_rows": rows}
    return figures, {"promote_db": str(folder / "theirs.db"), "memory_ids": ids[200:] + ids[:200], "bulk": 10_000}


def _checks(text: str) -> tuple[int, int]:
    """(o200k tokens, sections) of a markdown persona."""
    return O200K.count(text), len(split_sections(text, "## ").sections)


def print_table(ours: dict, theirs: dict, job: dict) -> None:
    rows = []
    for size in SIZES:
        mine, other = ours["render"][size], theirs["render"][str(size)]
        my_tokens, my_sections = _checks(mine["text"])
        their_tokens, their_sections = _checks(other["text"])
        verdict = []
        if their_tokens > CAP:
            verdict.append(f"over budget: {their_tokens} > {CAP} tokens")
        if their_sections <= 1:
            verdict.append(f"persona nearly empty: {their_sections} section(s)")
        rows.append((f"full render, {size // 1000}k facts", f"{mine['seconds'] * 1000:.1f} ms",
                     f"{other['seconds'] * 1000:.1f} ms", other["seconds"] / mine["seconds"],
                     f"{my_sections} sections, {my_tokens} tokens", "; ".join(verdict) or
                     f"{their_sections} sections, {their_tokens} tokens"))
    inject_file = Path(job["inject_file"]).read_text()
    block = theirs["inject"]["block"]
    lines_in, lines_out = inject_file.count("\n"), block.count("\n")
    inject_verdict = f"newlines destroyed: {lines_in} lines in, {lines_out + 1} out; " \
                     f"{O200K.count(block)} tokens" if lines_out < lines_in // 2 else "ok"
    rows.append(("injection, cold call", f"{ours['inject_cold_us']:.1f} µs", f"{theirs['inject']['cold_us']:.1f} µs",
                 theirs["inject"]["cold_us"] / ours["inject_cold_us"], "capped at section boundaries",
                 inject_verdict))
    rows.append(("injection, warm call", f"{ours['inject_warm_us']:.3f} µs", f"{theirs['inject']['warm_us']:.3f} µs",
                 theirs["inject"]["warm_us"] / ours["inject_warm_us"], "no syscall",
                 "two stat calls per call; " + ("wrong output (above)" if inject_verdict != "ok" else "ok")))
    should = theirs["triggers"]["result"]
    trigger_us = (ours["triggers"]["us"], theirs["triggers"]["us"])
    rows.append(("trigger check, 10k memories", f"{trigger_us[0]:.0f} µs", f"{trigger_us[1]:.0f} µs",
                 trigger_us[1] / trigger_us[0],
                 f"interval fired: {ours['triggers']['interval_fired']}",
                 "wrong: did not fire for 10k new memories" if not should["should"] else should["reason"]))
    promote = theirs["promote"]
    rows.append(("promote one fact", f"{ours['promote']['one_us']:.0f} µs", f"{promote['one_us']:.0f} µs",
                 promote["one_us"] / ours["promote"]["one_us"],
                 f"promote twice: {ours['promote']['promote_twice_rows']} row",
                 f"wrong: promote twice made {promote['promote_twice_rows']} rows"
                 if promote["promote_twice_rows"] != 1 else "ok"))
    rows.append(("import/promote 10k facts", f"{ours['promote']['bulk_s']:.2f} s (import)",
                 f"{promote['bulk_s']:.2f} s (10k promotes)", promote["bulk_s"] / ours["promote"]["bulk_s"],
                 f"{ours['promote']['bulk_n']} facts, one transaction",
                 f"{promote['bulk_n']} facts, one commit each"))
    print("| operation | persona-tier | existing 3.15.1 | existing / ours | persona-tier output | existing output |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, mine, other, ratio, my_note, their_note in rows:
        print(f"| {name} | {mine} | {other} | {ratio:.1f}x | {my_note} | {their_note} |")


def corpus(rng: random.Random, facts: int, topics: int) -> list[tuple[str, str]]:
    out = []
    for i in range(facts):
        language = rng.choice(list(LANGUAGES))
        text = rng.choice(LANGUAGES[language])
        out.append((f"{language}-{rng.randrange(topics)}", f"{text} ({i}){' ' + 'detail ' * rng.randrange(12)}"))
    return out


def print_fidelity(work: Path, renders: int = 100) -> None:
    """Share of renders within budget (exact o200k), and median budget use when content overflows."""
    rng = random.Random(20261130)
    within = overflow = 0
    used: list[float] = []
    for index in range(renders):
        folder = work / f"fidelity-{index}"
        folder.mkdir()
        settings = settings_in(folder)
        with PersonaStore.from_settings(settings) as store:
            store.list()
            rows = corpus(rng, rng.randrange(20, 1500), rng.randrange(3, 60))
            with sqlite3.connect(folder / "m.db") as conn:
                conn.executemany("INSERT INTO memoria_persona (tier, topic, content, confidence) "
                                 "VALUES ('long_term', ?, ?, 0.7)", rows)
            report = run_pipeline(settings, store=store, dry_run=True)[0]
        tokens = O200K.count(report.text)
        within += tokens <= CAP
        if report.sections_dropped:
            overflow += 1
            used.append(tokens / CAP)
        shutil.rmtree(folder)
    print()
    print(f"budget fidelity over {renders} multilingual renders (o200k, budget {CAP}): "
          f"{within / renders:.0%} within budget; {overflow} overflowed, median budget use "
          f"{statistics.median(used):.1%} (min {min(used):.1%})")


if __name__ == "__main__":
    main()
