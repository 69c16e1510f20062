"""`make bench-pg`'s comparison with another commit, in the same run: that commit's code checked out beside
this one (a detached ``git worktree`` under ``var/``), run in subprocesses against the same database.

Both sides run the same operations, interleaved, on the same machine at the same moments: statements and round
trips of one profile's tick counted on the wire (:mod:`benchmarks.pg_wire`), and ``tick --all-profiles``
throughput of one worker. The compared commit must read the same schema (no migration between the two), but
for the import and its sizes, which each code makes in a database of its own (``--import-only``).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from .pg_wire import Relay

REPO = Path(__file__).resolve().parent.parent

# One profile's ticks, on the code in PYTHONPATH: "ready" once two ticks of another profile (argv[3]) have
# warmed the pool (each pooled connection carries the session settings once, as a worker's do), then one tick
# per input line.
PROBE = """
import sys
from pipeline import PersonaStore, load_settings, tick
settings = load_settings(config_files=[sys.argv[1]], overrides={"store.profile": sys.argv[2]})
warm = load_settings(config_files=[sys.argv[1]], overrides={"store.profile": sys.argv[3]})
for _ in range(2):
    with PersonaStore.from_settings(warm) as store:
        tick(warm, store=store)
with PersonaStore.from_settings(settings) as store:
    store.open()
    print("ready", flush=True)
    for _ in sys.stdin:
        print(tick(settings, store=store).rendered, flush=True)
"""


# One importer of `make bench-pg`'s fleet, on the code in PYTHONPATH: each profile's facts file (argv[2]/N.yaml,
# N from argv[3:]) imported into the database at argv[1], one transaction a profile; then the CPU seconds its
# server processes spent (its pooled connections, found by the application name it runs under, still open).
IMPORTER = """
import os, sys
from pathlib import Path
import psycopg
from pipeline import PersonaStore, import_facts
for index in map(int, sys.argv[3:]):
    with PersonaStore(sys.argv[1], profile=f"user-{index:05d}") as store:
        import_facts(store, Path(sys.argv[2]) / f"{index}.yaml")
with psycopg.connect(sys.argv[1]) as conn:
    pids = [row[0] for row in conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s AND "
                                           "pid <> pg_backend_pid()", (os.environ["PGAPPNAME"],))]
ticks = sum(int(field) for pid in pids
            for field in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:13])
print(ticks / os.sysconf("SC_CLK_TCK"))
"""


def run_importers(tree: Path, url: str, folder: Path, shares: list[list[int]]) -> tuple[float, float, float]:
    """Seconds until one importer process per share, on ``tree``'s code, has imported its profiles; and the CPU
    seconds the importers spent, and their server processes (the server on this machine: read from /proc)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", IMPORTER, url, str(folder), *map(str, share)],
                              env={**env_for(tree), "PGAPPNAME": f"persona-bench-import-{number}"}, cwd=tree,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for number, share in enumerate(shares)]
    server = 0.0
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"an importer on {tree} failed: {err}")
        server += float(out.split()[-1])
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return seconds, client, server


def checkout(ref: str) -> Path:
    """A detached worktree of ``ref`` under var/bench-pg-base/ (made once per commit, kept for the next run)."""
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{ref}^{{commit}}"], check=True,
                         capture_output=True, text=True).stdout.strip()
    tree = REPO / "var" / "bench-pg-base" / sha[:12]
    if not (tree / "pipeline").is_dir():
        tree.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), sha], check=True,
                       capture_output=True)
    return tree


def env_for(tree: Path) -> dict[str, str]:
    """A clean environment whose ``import pipeline`` is ``tree``'s (run it with ``cwd=tree``: ``-c`` and ``-m``
    put the working directory first on the path)."""
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(tree)}


def count_tick(tree: Path, relay: Relay, config: Path, profile: str, warm: str) -> list[tuple[int, int]]:
    """(statements, round trips) of a tick of ``profile`` (changed), then of a second tick (nothing to do)."""
    proc = subprocess.Popen([sys.executable, "-c", PROBE, str(config), profile, warm], env=env_for(tree), cwd=tree,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"the tick probe on {tree} did not start")
    counts = []
    for expected in ("True", "False"):
        relay.tally.reset()
        proc.stdin.write("tick\n")
        proc.stdin.flush()
        rendered = proc.stdout.readline().strip()
        if rendered != expected:
            raise SystemExit(f"the tick probe on {tree} rendered {rendered!r}, expected {expected}")
        counts.append((relay.tally.statements, relay.tally.round_trips))
        if os.environ.get("PERSONA_BENCH_SHOW_SQL"):
            print(f"{tree} rendered={rendered}:", *(f"    {sql[:120]}" for sql in relay.tally.sql), sep="\n")
    proc.stdin.close()
    proc.wait(30)
    return counts


def round_trip_rows(trees: dict[str, Path], relay: Relay, config: Path,
                    change: Callable[[int], list[str]]) -> list[tuple[str, str]]:
    """One row per code: the statements and round trips of a changed and of an unchanged tick."""
    rows = []
    for label, tree in trees.items():
        profile, warm = change(2)
        (changed, changed_trips), (idle, idle_trips) = count_tick(tree, relay, config, profile, warm)
        rows.append((f"one profile's tick on the wire, {label}",
                     f"changed: {changed} statements, {changed_trips} round trips; "
                     f"nothing to do: {idle} statements, {idle_trips} round trips"))
    return rows


def throughput_rows(trees: dict[str, Path], rounds: int, run: Callable[[Path], float]) -> list[tuple[str, str]]:
    """Renders per second of one ``tick --all-profiles`` worker per code, interleaved over ``rounds``."""
    rates: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(rounds):
        for label, tree in trees.items():
            rates[label].append(run(tree))
    medians = {label: statistics.median(values) for label, values in rates.items()}
    first = next(iter(medians.values()))
    return [(f"`tick --all-profiles`, 1 worker, renders/s, {label} (median of {rounds}, interleaved)",
             f"{median:,.0f} renders/s ({median / first:.2f}x {next(iter(medians))}; runs: "
             f"{', '.join(f'{rate:,.0f}' for rate in rates[label])})") for label, median in medians.items()]
