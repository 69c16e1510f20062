"""The cost of `persona forget` in the hosts' histories, beside its floor: a plain `grep -c` of the same texts.

A HOME of its own holds about 200 MB of Claude Code transcripts (about 1 MB each, the size a long session reaches)
written from words we did not pick: each record's text is a slice of a file of this Python's own standard library,
as a Read tool's output, an assistant's answer or a user's message, with non-ASCII text and JSON escapes where the
sources have them. Ten facts (the usual shapes: preferences, tools, habits, two of them not in English) are
forgotten at once; none of them stands in the transcripts, then one transcript holds two of them.

Figures: the scrub's time for ten facts against `grep -c -F -f` of the ten texts over the same files in the same run
(the goal: at most 2x), in wall-clock time and in CPU time (what a machine shared with other work still compares
fairly), the scrub's peak memory (a process of its own), one transcript rewritten, and a journal's finish (the
texts known by their keyed hashes alone, every field read in full: over the first 20 transcripts, so `make bench`
stays short). Then the same volume again in 20 transcripts of 10 MB (a file read in several blocks, a line cut by
each read) against grep.
"""

from __future__ import annotations

import json
import os
import random
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.fs.text_find import Needle
from pipeline.schedule.host_histories import needles, scrub_histories

TRANSCRIPTS, TRANSCRIPT_BYTES = 200, 1_000_000
JOURNAL_TRANSCRIPTS = 20
KEY = b"benchmark key"
FACTS = ["Answers tersely and skips the preamble", "Uses uv for Python, never pip",
         "Never force-pushes a shared branch", "Prefers concrete examples over theory",
         "Writes commit messages in the imperative mood", "Runs the test suite before every push",
         "Drinks Quetzal tea, never coffee", "Keeps functions under forty lines",
         "用中文回答技术问题，代码注释用英文", "Schreibt Commit-Nachrichten auf Englisch"]


def _sources() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(stdlib.glob("*.py"))[:400]:
        try:
            texts.append(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def _record(rng: random.Random, sources: list[str]) -> dict[str, object]:
    source = rng.choice(sources)
    start = rng.randrange(max(1, len(source) - 200))
    body = source[start:start + rng.randrange(200, 8000)]
    ids = {"uuid": f"{rng.getrandbits(128):032x}", "sessionId": "s", "cwd": "/home/me/work", "gitBranch": "main",
           "timestamp": "2026-12-01T10:00:00.000Z"}
    kind = rng.random()
    if kind < 0.4:
        return {**ids, "type": "user", "message": {"role": "user", "content": [
            {"tool_use_id": "toolu_1", "type": "tool_result", "content": body}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/home/me/work/x.py", "content": body}}}
    if kind < 0.8:
        return {**ids, "type": "assistant", "message": {"role": "assistant", "model": "claude", "content": [
            {"type": "text", "text": body[:2000]}, {"type": "tool_use", "id": "toolu_1", "name": "Read",
                                                    "input": {"file_path": "/home/me/work/x.py"}}]}}
    return {**ids, "type": "user", "message": {"role": "user", "content": body[:500]}}


def _transcripts(home: Path, count: int = TRANSCRIPTS, each: int = TRANSCRIPT_BYTES) -> list[Path]:
    rng, sources, made = random.Random(51), _sources(), []
    for index in range(count):
        path = home / ".claude" / "projects" / f"-home-me-p{index % 20}" / f"s{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines, size = [], 0
        while size < each:
            line = json.dumps(_record(rng, sources), ensure_ascii=rng.random() < 0.2) + "\n"
            lines.append(line)
            size += len(line.encode("utf-8"))
        path.write_text("".join(lines), encoding="utf-8")
        made.append(path)
    return made


def _median_s(run: object, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _grep(files: list[Path], patterns: Path) -> None:
    subprocess.run(["grep", "-c", "-F", "-f", str(patterns), *map(str, files)], capture_output=True, check=False)


def _cpu_s(run: object, children: bool) -> float:
    """The CPU time ``run`` takes (in child processes: grep's), the least of three."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    times = []
    for _ in range(3):
        before = resource.getrusage(who)
        run()  # type: ignore[operator]
        after = resource.getrusage(who)
        times.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return min(times)


def _peak_mb(home: Path) -> float:
    """The scrub's peak resident memory, in a process of its own."""
    code = ("import sys; from pipeline.schedule.host_histories import needles, scrub_histories; "
            f"scrub_histories(needles({KEY!r}, {FACTS!r}), {KEY!r})")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "HOME": str(home)}, check=True)
    return max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def rows() -> list[tuple[str, str, str]]:
    return _in_home(_measure) + _in_home(_large)


def _in_home(measure: Callable[[Path], list[tuple[str, str, str]]]) -> list[tuple[str, str, str]]:
    before = os.environ.get("HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # never the real home: these are the benchmark's own transcripts
        try:
            return measure(Path(tmp))
        finally:
            if before is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = before


@dataclass(frozen=True)
class Timed:
    """The scrub's and `grep -c -F -f`'s times over the same files, wall-clock and CPU, in seconds."""

    grep: float
    scrub: float
    grep_cpu: float
    scrub_cpu: float

    def against_grep(self) -> str:
        return (f"{self.scrub * 1000:.0f} ms ({self.scrub / self.grep:.2f}x grep; "
                f"CPU {self.scrub_cpu / self.grep_cpu:.2f}x)")


def _timed(made: list[Path], home: Path) -> Timed:
    """The scrub beside `grep -c -F -f` of the ten texts over the same files, in the same run."""
    patterns = home / "facts.txt"
    patterns.write_text("\n".join(FACTS) + "\n", encoding="utf-8")
    found = needles(KEY, FACTS)
    _grep(made, patterns)  # both read the files from the page cache
    return Timed(_median_s(lambda: _grep(made, patterns)), _median_s(lambda: scrub_histories(found, KEY)),
                 _cpu_s(lambda: _grep(made, patterns), children=True),
                 _cpu_s(lambda: scrub_histories(found, KEY), children=False))


def _large(home: Path) -> list[tuple[str, str, str]]:
    """The same volume in a tenth as many transcripts, ten times larger (a file is read in several blocks)."""
    made = _transcripts(home, TRANSCRIPTS // 10, TRANSCRIPT_BYTES * 10)
    size = sum(path.stat().st_size for path in made) / 1e6
    return [("forget: the same in transcripts of 10 MB, texts nowhere",
             f"{len(made)} transcripts, {size:.0f} MB, 10 facts", _timed(made, home).against_grep())]


def _measure(home: Path) -> list[tuple[str, str, str]]:
    made = _transcripts(home)
    size = sum(path.stat().st_size for path in made) / 1e6
    timed, found = _timed(made, home), needles(KEY, FACTS)
    peak = _peak_mb(home)
    with made[0].open("a", encoding="utf-8") as handle:
        for fact in FACTS[:2]:
            handle.write(json.dumps({"type": "user", "message": {"role": "user", "content": f"remember: {fact}"}})
                         + "\n")
    start = time.perf_counter()
    one = scrub_histories(found, KEY)
    rewritten = time.perf_counter() - start
    assert len(one.files) == 1
    for path in made[JOURNAL_TRANSCRIPTS:]:
        path.unlink()
    blind = [Needle(n.digest, n.tokens, n.chars, n.short) for n in found]
    journal = _median_s(lambda: scrub_histories(blind, KEY), repeats=1)
    scale = f"{TRANSCRIPTS} transcripts, {size:.0f} MB, 10 facts"
    return [("forget: `grep -c -F -f` of the ten texts (the floor)", scale,
             f"{timed.grep * 1000:.0f} ms ({timed.grep_cpu * 1000:.0f} ms CPU)"),
            ("forget: hosts' histories scrubbed, texts nowhere", scale, timed.against_grep()),
            ("forget: its peak memory (a process of its own)", scale, f"{peak:.0f} MB"),
            ("forget: the same, one transcript rewritten", scale, f"{rewritten * 1000:.0f} ms"),
            ("forget: a journal finished, texts known by hash alone",
             f"{JOURNAL_TRANSCRIPTS} transcripts, {size * JOURNAL_TRANSCRIPTS / TRANSCRIPTS:.0f} MB, 10 facts",
             f"{journal:.1f} s")]


if __name__ == "__main__":
    for row in rows():
        print(" | ".join(row))
