"""Worker processes for the concurrency tests (run as `python -m tests.support.workers ...`)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pipeline import PersonaStore, load_settings, run_pipeline


def settings_for(workdir: Path):
    return load_settings(overrides={
        "store.path": str(workdir / "m.db"),
        "injection.file": str(workdir / "out" / "persona.md"),
        "render.template_dirs": [str(workdir / "templates")],
        "targets": {"markdown": {"template": "framed.j2"}},
    })


def writer(workdir: Path, name: str, rounds: int) -> None:
    """Each round changes the store (a new generation) and renders it."""
    settings = settings_for(workdir)
    with PersonaStore.from_settings(settings) as store:
        for i in range(rounds):
            store.add(f"{name} fact {i}", topic=name)
            run_pipeline(settings, store=store)


def reader(workdir: Path, stop_file: Path) -> None:
    """Read the file until told to stop; print reads and torn reads."""
    path = workdir / "out" / "persona.md"
    reads = torn = 0
    while not stop_file.exists():
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        reads += 1
        if not (text.startswith("BEGIN\n") and text.endswith("END\n")):
            torn += 1
        time.sleep(0.0005)
    print(reads, torn)


if __name__ == "__main__":
    role, workdir = sys.argv[1], Path(sys.argv[2])
    if role == "writer":
        writer(workdir, sys.argv[3], int(sys.argv[4]))
    else:
        reader(workdir, Path(sys.argv[3]))
