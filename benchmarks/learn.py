"""The cost of `persona learn`: 1,000 entries in each host's memory (Hermes' USER.md, Gemini CLI's GEMINI.md after its
baseline, a Claude Code project's MEMORY.md), learned into an empty store, beside importing the same entries with
`persona import` (the floor: the same engine, without the record of what was learned or the files' discovery).
The issue's bar is learning at most twice the import's time. Each host's entries have a topic of their own (Hermes'
are all `general`): within one topic every added fact is judged against the others, in both, and that judgement
would be the figure instead."""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline import PersonaStore, import_source, load_settings
from pipeline.schedule.learn import learn, memory_stamp

ENTRIES = 1_000
PROJECTS = 100  # Claude Code project folders with an auto memory, for the MCP server's check per read


def _facts(host: str) -> list[str]:
    return [f"{host} remembered fact {index}: prefers option {index % 37} for task {index}." for index in
            range(ENTRIES)]


@contextmanager
def _home(workdir: Path) -> Iterator[Path]:
    home = workdir / "home"
    saved = {name: os.environ.get(name) for name in ("HOME", "HERMES_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME")}
    os.environ["HOME"] = str(home)
    for name in saved:
        if name != "HOME":
            os.environ.pop(name, None)
    try:
        yield home
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _files(home: Path, project: Path) -> dict[str, tuple[Path, str]]:
    """Each host's memory file as its model leaves it, with the import format that reads it."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    files = {"hermes": (home / ".hermes" / "memories" / "USER.md", "\n§\n".join(_facts("hermes")), "hermes"),
             "gemini": (home / ".gemini" / "GEMINI.md",
                        "## gemini\n" + "".join(f"- {fact}\n" for fact in _facts("gemini")), "instructions"),
             "claude": (home / ".claude" / "projects" / slug / "memory" / "MEMORY.md",
                        "## claude\n" + "".join(f"- {fact}\n" for fact in _facts("claude")), "instructions")}
    for path, text, _ in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {name: (path, fmt) for name, (path, _, fmt) in files.items()}


def _once(learning: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp, _home(Path(tmp)) as home:
        project = Path(tmp) / "work" / "shop"
        project.mkdir(parents=True)
        settings = load_settings(overrides={"store.path": str(Path(tmp) / "m.db"),
                                            "injection.file": str(Path(tmp) / "p.md")})
        gemini = home / ".gemini" / "GEMINI.md"
        with PersonaStore.from_settings(settings) as store:
            store.list()
            if learning:  # Gemini's first learn only notes what the file holds: the baseline, before its model adds
                gemini.parent.mkdir(parents=True)
                gemini.write_text("- Uses 4 spaces.\n", encoding="utf-8")
                learn(settings, store)
            files = _files(home, project)
            start = time.perf_counter()
            if learning:
                learn(settings, store)
            else:
                for path, fmt in files.values():
                    import_source(store, path, fmt, skip_bad=True)
            return time.perf_counter() - start


def _stamp_s(calls: int = 200) -> float:
    """One check of the hosts' memory files, as a running MCP server makes it before each read (a glob per memory
    folder and a stat per file), with nothing changed: the median of ``calls``."""
    with tempfile.TemporaryDirectory() as tmp, _home(Path(tmp)) as home:
        settings = load_settings(overrides={"store.path": str(Path(tmp) / "m.db")})
        _files(home, Path(tmp) / "work" / "shop")
        for index in range(PROJECTS):
            memory = home / ".claude" / "projects" / f"-work-p{index}" / "memory" / "MEMORY.md"
            memory.parent.mkdir(parents=True)
            memory.write_text("- A fact.\n", encoding="utf-8")
        timings = []
        for _ in range(calls):
            start = time.perf_counter()
            memory_stamp(settings, settings.store.profile)
            timings.append(time.perf_counter() - start)
        return statistics.median(timings)


def rows(repeats: int = 3) -> list[tuple[str, str, str]]:
    learned = statistics.median(_once(True) for _ in range(repeats))
    imported = statistics.median(_once(False) for _ in range(repeats))
    scale = f"{ENTRIES:,} entries from each of 3 hosts"
    ratio = learned / imported
    return [("persona learn, into an empty store", scale, f"{learned * 1000:.0f} ms ({ratio:.2f}x import)"),
            ("persona import of the same files (floor)", scale, f"{imported * 1000:.0f} ms"),
            ("an MCP read's check of the hosts' memory files, nothing changed",
             f"Hermes, Gemini CLI and {PROJECTS + 1} Claude Code projects' memory", f"{_stamp_s() * 1e6:.0f} µs")]


if __name__ == "__main__":
    for figure, scale, value in rows():
        print(f"| {figure} | {scale} | {value} |")
