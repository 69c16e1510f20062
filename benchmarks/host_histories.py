"""The cost of `persona forget` in the hosts' histories: a HOME of its own holding 200 Claude Code transcripts of
about 1 MB each (the size a long session reaches), none of them holding the text, then one that does.

The first figure is what every forget now pays when the text is nowhere (the quick byte search); the second, the
JSON-aware replacement and the atomic swap of one transcript.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from pipeline.schedule.host_histories import scrub_histories

TRANSCRIPTS, LINES = 200, 2_000
SECRET = 'Drinks "Quetzal" tea & <honey>'


def _transcripts(home: Path) -> list[Path]:
    line = json.dumps({"type": "assistant", "message": {"content": "Ran the tests; all green. " * 18}}) + "\n"
    made = []
    for index in range(TRANSCRIPTS):
        path = home / ".claude" / "projects" / f"-work-p{index % 20}" / f"s{index}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line * LINES, encoding="utf-8")
        made.append(path)
    return made


def _ms(repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        scrub_histories([SECRET])
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def rows() -> list[tuple[str, str, str]]:
    before = os.environ.get("HOME")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"] = tmp  # never the real home: these are the benchmark's own transcripts
        try:
            made = _transcripts(Path(tmp))
            size = sum(path.stat().st_size for path in made) / 1e6
            nowhere = _ms()
            start = time.perf_counter()
            with made[0].open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"type": "user", "message": {"content": f"remember: {SECRET}"}}) + "\n")
            one = scrub_histories([SECRET])
            replaced = (time.perf_counter() - start) * 1000
            assert len(one.files) == 1
        finally:
            if before is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = before
    scale = f"{TRANSCRIPTS} transcripts, {size:.0f} MB"
    return [("forget: hosts' histories searched, text nowhere", scale, f"{nowhere:.0f} ms"),
            ("forget: the same, one transcript rewritten", scale, f"{replaced:.0f} ms")]
