"""What closeness in meaning (``supersede.embeddings: auto``, the ``embed`` extra) costs a write, a scan and an import.

Each measurement runs in a fresh process (as a CLI command does, so the model's load is counted where it happens),
with ``off`` and ``auto`` alternated over :data:`ROUNDS` rounds in one run (the machine is shared: compare only
within a run). A process writes the five full topics of :mod:`.pairs` (35 facts, each change last in its topic),
then scans the stored persona, then imports the first day's mem0 export into a second profile. Printed: the median
of each step over the rounds, per mode. ``python -m benchmarks.meaning_cost``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline import PersonaStore

from .first_day import HOMES
from .pairs import FULL_TOPICS, modes

ROUNDS = 3


def one(mode: str) -> dict[str, float]:
    """This process's timings, in seconds: the 35 writes, the scan, the import."""
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "m.db"
        with PersonaStore(database, supersede_embeddings=mode) as store:  # type: ignore[arg-type]
            start = time.perf_counter()
            for topic, (old, between, new) in FULL_TOPICS.items():
                for text in (old, *between, new):
                    store.add(text, topic=topic)
            writes = time.perf_counter() - start
            start = time.perf_counter()
            store.proposals(scan=True)
            scan = time.perf_counter() - start
        home = next((home for home in HOMES if (home / "mem0.json").is_file()), None)
        imported = 0.0
        if home is not None:
            start = time.perf_counter()
            (Path(tmp) / "home").mkdir()
            subprocess.run([sys.executable, "-m", "pipeline", "--db", str(database), "import", str(home / "mem0.json"),
                            "--profile", "importer", "--from", "mem0", "--no-render", "--json"],
                           env={**_environment(), "HOME": str(Path(tmp) / "home"),
                                "MNEMOSYNE_PERSONA_SUPERSEDE__EMBEDDINGS": mode},
                           capture_output=True, check=True, timeout=600)
            imported = time.perf_counter() - start
    return {"writes": writes, "scan": scan, "import": imported}


def _environment() -> dict[str, str]:
    import os

    return {name: value for name, value in os.environ.items() if not name.startswith(("MNEMOSYNE_", "HERMES_"))}


def measure() -> dict[str, dict[str, list[float]]]:
    """Each mode's timings over the rounds, the modes alternated, each in a process of its own."""
    found: dict[str, dict[str, list[float]]] = {mode: {} for mode in modes()}
    for _ in range(ROUNDS):
        for mode in modes():
            done = subprocess.run([sys.executable, "-m", "benchmarks.meaning_cost", "--one", mode],
                                  capture_output=True, text=True, check=True, timeout=900)
            for step, seconds in json.loads(done.stdout).items():
                found[mode].setdefault(step, []).append(seconds)
    return found


def rows() -> list[tuple[str, str, str]]:
    """The benchmark table's rows: per mode, the medians of the writes (per write), the scan and the import."""
    found = []
    for mode, steps in measure().items():
        found.append((f"cost of supersede.embeddings {mode}", f"35 writes, scan, mem0 import; median of {ROUNDS}",
                      f"{statistics.median(steps['writes']) / 35 * 1000:.0f} ms a write, scan "
                      f"{statistics.median(steps['scan']):.2f} s, import {statistics.median(steps['import']):.2f} s"))
    return found


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2])))
    else:
        for row in rows():
            print(" | ".join(row))
