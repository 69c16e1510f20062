"""Whole processes, as hosts and users start them, each beside its floor or peer timed in the same rounds.

Every round starts each command once, in turn, so a busy moment of the
machine lands on all of them alike; a ratio is the median of the rounds'
ratios. Bytecode is written and used (``PYTHONDONTWRITEBYTECODE`` is dropped),
as in an installed package.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pipeline import PersonaStore, load_settings, run_pipeline

ROUNDS = 15
WARMUPS = 2
ROUND = "{round}"  # in a command's arguments: the round's number (a write that must be new each time)

OUR_FIRST_BLOCK = """
from pipeline import PersonaInjector, load_settings
assert PersonaInjector(load_settings()).block()
"""
# The injector's first block through the delivery snapshot (pipeline.inject.first_block): the same text.
OUR_FIRST_BLOCK_FAST = """
from pipeline import first_block
assert first_block()
"""
# A render's floor in a new process (#40: a render with nothing new ≤ 4× it): what any render must do from a cold
# start, as plainly as Python can - load the exact counter, one SELECT, one exact count, one durable commit (the
# kept-store floor of benchmarks/compare.py, on a copy of the database so its commit leaves ours alone).
RENDER_FLOOR = """
import sqlite3, sys
from pipeline import get_counter
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (at TEXT)")
rows = conn.execute("SELECT topic, content FROM memoria_persona WHERE session_id = 'default'").fetchall()
get_counter("o200k_base").count("".join(f"- {content}\\n" for _, content in rows))
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO bench_floor VALUES ('x')")
conn.execute("COMMIT")
"""
THEIR_FIRST_BLOCK = """
from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin
assert HermesPersonaPromptMixin()._persona_block()
"""


def _home(root: Path, facts: int) -> tuple[Path, Path]:
    """A Hermes home whose Mnemosyne database holds ``facts`` facts, rendered; (home, persona file)."""
    from .__main__ import populate

    home = root / f"home-{facts}"
    db = home / "mnemosyne" / "data" / "mnemosyne.db"
    db.parent.mkdir(parents=True)
    populate(db, facts)
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(home / "memory" / "persona.md")})
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)
    return home, home / "memory" / "persona.md"


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("MNEMOSYNE_") and key not in ("PYTHONDONTWRITEBYTECODE", "HERMES_HOME")}
    return {**env, **extra}


Command = tuple[str, Sequence[str], dict[str, str]]


def _commands(root: Path, existing_python: str | None) -> dict[str, Command]:
    """Every command timed, by label: ours, the floors, and (given its venv's python) the existing tier's."""
    python, persona = sys.executable, str(Path(sys.executable).with_name("persona"))
    existing_python = existing_python and os.path.abspath(existing_python)  # the commands run in ``root``
    commands: dict[str, Command] = {
        "python -c pass": ("floor", [python, "-c", "pass"], _env()),
        "import typer": ("floor", [python, "-c", "import typer"], _env()),
    }
    for facts in (50, 1_000):
        home, persona_file = _home(root, facts)
        host = _env(HERMES_HOME=str(home), MNEMOSYNE_PERSONA_ENABLED="1")
        commands[f"first block {facts}"] = ("ours", [python, "-c", OUR_FIRST_BLOCK], host)
        commands[f"first_block() {facts}"] = ("ours", [python, "-c", OUR_FIRST_BLOCK_FAST], host)
        # Its own home: a render under other settings would record another delivery key for the blocks above.
        (root / "render").mkdir(exist_ok=True)
        rendered, _ = _home(root / "render", facts)
        commands[f"persona render {facts}"] = ("ours", [persona, "render"], _env(HERMES_HOME=str(rendered)))
        floor_db = root / f"floor-{facts}.db"
        floor_db.write_bytes((rendered / "mnemosyne" / "data" / "mnemosyne.db").read_bytes())
        commands[f"render floor {facts}"] = ("floor", [python, "-c", RENDER_FLOOR, str(floor_db)], _env())
        # Its own home too: each run adds a fact (a new one each round, ROUND below) and renders every target.
        (root / "add").mkdir(exist_ok=True)
        written, _ = _home(root / "add", facts)
        commands[f"persona add {facts}"] = ("ours", [persona, "add", f"Keeps benchmark note {ROUND}.", "--topic",
                                                     "bench"], _env(HERMES_HOME=str(written)))
        if existing_python:
            commands[f"existing first block {facts}"] = ("peer", [existing_python, "-c", THEIR_FIRST_BLOCK],
                                                         _env(MNEMOSYNE_PERSONA_ENABLED="1",
                                                              MNEMOSYNE_PERSONA_FILE=str(persona_file)))
    home = root / "home-1000"
    user = _env(HERMES_HOME=str(home))
    commands.update({
        "persona --help": ("ours", [persona, "--help"], user),
        "persona status": ("ours", [persona, "status"], user),
        "persona inject": ("ours", [persona, "--set", "injection.enabled=true", "inject"], user),
        "persona inject --format claude-code": ("ours", [persona, "inject", "--format", "claude-code"], user),
    })
    if existing_python:
        theirs = root / "their-home"  # `mnemosyne stats` writes its own config.yaml: not into our home
        (theirs / "mnemosyne" / "data").mkdir(parents=True)
        (theirs / "mnemosyne" / "data" / "mnemosyne.db").write_bytes(
            (home / "mnemosyne" / "data" / "mnemosyne.db").read_bytes())
        mnemosyne = str(Path(existing_python).with_name("mnemosyne"))
        commands["mnemosyne stats"] = ("peer", [mnemosyne, "stats"], _env(HERMES_HOME=str(theirs)))
    return commands


def _time(argv: Sequence[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def measure(existing_python: str | None, rounds: int = ROUNDS) -> dict[str, list[float]]:
    """Seconds of each command, one sample per round, the commands interleaved."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        commands = _commands(root, existing_python)
        samples: dict[str, list[float]] = {label: [] for label in commands}
        for index in range(WARMUPS + rounds):
            for label, (_, argv, env) in commands.items():
                seconds = _time([arg.replace(ROUND, str(index)) for arg in argv], env, root)
                if index >= WARMUPS:
                    samples[label].append(seconds)
    return samples


# (figure, our command, the existing tier's, goal)
ROWS = (
    ("a host's first block in a new process (`PersonaInjector(load_settings())`), 50 facts, nothing to render",
     "first block 50", "existing first block 50", "≤ 150 ms"),
    ("a host's first block in a new process (`PersonaInjector(load_settings())`), 1,000 facts, nothing to render",
     "first block 1000", "existing first block 1000", "≤ 150 ms"),
    # The same block through the delivery snapshot (#40's goal: the existing tier's first block, same rounds).
    ("a host's first block in a new process (`pipeline.first_block()`), 50 facts, nothing changed",
     "first_block() 50", "existing first block 50", "≤ 1.5× existing"),
    ("a host's first block in a new process (`pipeline.first_block()`), 1,000 facts, nothing changed",
     "first_block() 1000", "existing first block 1000", "≤ 1.5× existing"),
    ("`persona --help`", "persona --help", None, "≤ 0.80 ÷ floor (#40)"),
    # Answered by the delivery fast path (pipeline/deliver.py) once the full path has recorded the answer; #40's
    # goal is the existing tier's first block, in the same rounds.
    ("`persona inject` (`--set injection.enabled=true`), 1,000 facts, nothing changed", "persona inject",
     "existing first block 1000", "≤ 1.5× existing"),
    ("`persona inject --format claude-code` (the SessionStart hook), 1,000 facts, nothing changed",
     "persona inject --format claude-code", "existing first block 1000", "≤ 1.5× existing"),
    ("`persona status`", "persona status", "mnemosyne stats", "≤ 1.00 ÷ existing (#40)"),
    # A write from the shell: one fact added, then every target rendered (#52: ≤ 3× the floor).
    ("`persona add` (one fact, every target rendered), 50 facts", "persona add 50", None, "≤ 3× floor (#52)"),
    ("`persona add` (one fact, every target rendered), 1,000 facts", "persona add 1000", None, "≤ 3× floor (#52)"),
)
FLOOR = "import typer"
# (figure, ours, its floor, goal): a render in a new process beside the render floor, same rounds.
RENDER_ROWS = tuple((f"`persona render`, {facts:,} facts, nothing new", f"persona render {facts}",
                     f"render floor {facts}", "≤ 4× floor (#40)") for facts in (50, 1_000))


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def _ratio(ours: list[float], other: list[float]) -> str:
    return f"{statistics.median(a / b for a, b in zip(ours, other, strict=True)):.2f}"


def rows(samples: dict[str, list[float]]) -> list[tuple[str, ...]]:
    """(figure, ours, the floor, ours ÷ floor, the existing tier, ours ÷ it, goal): medians, and for each ratio
    the median of the rounds' ratios."""
    out = []
    for figure, ours, peer, goal in ROWS:
        mine, floor = samples[ours], samples[FLOOR]
        theirs = samples.get(peer or "")
        out.append((figure, _ms(mine), _ms(floor), _ratio(mine, floor), _ms(theirs) if theirs else "—",
                    _ratio(mine, theirs) if theirs else "—", goal))
    out.append(("`python -c pass`", _ms(samples["python -c pass"]), _ms(samples[FLOOR]),
                _ratio(samples["python -c pass"], samples[FLOOR]), "—", "—", ""))
    return out


def print_table(existing_python: str | None) -> None:
    """Measure and print the whole-process table."""
    samples = measure(existing_python)
    table = rows(samples)
    print(f"Whole processes, medians of {ROUNDS} interleaved rounds; a ratio is the median of the rounds' ratios "
          "(ours ÷ the other):")
    print()
    print("| figure | persona-tier | floor: `python -c 'import typer'` | ÷ floor | existing tier 3.15.1 | "
          "÷ existing | goal |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in table:
        print("| " + " | ".join(row) + " |")
    print()
    print("A render in a new process beside its floor (a cold start that loads the exact counter, one SELECT, one "
          "exact count, one durable commit), the same rounds:")
    print()
    print("| figure | persona-tier | floor | ÷ floor | goal |")
    print("| --- | ---: | ---: | ---: | --- |")
    for figure, ours, floor, goal in RENDER_ROWS:
        print(f"| {figure} | {_ms(samples[ours])} | {_ms(samples[floor])} | {_ratio(samples[ours], samples[floor])} "
              f"| {goal} |")


if __name__ == "__main__":
    print_table(sys.argv[1] if len(sys.argv) > 1 else None)
