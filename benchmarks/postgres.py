"""`make bench-pg`: persona-tier on PostgreSQL, many profiles, several workers.

Runs against the server at PERSONA_BENCH_POSTGRES_URL (default: this
project's machines' server) in a database of its own, dropped afterwards.
Prints figures, not pass/fail:

- import of PROFILES profiles x FACTS facts (declarative facts files, one
  transaction per profile, IMPORTERS processes), and the size of the proposal
  check's stem index beside the facts' (``--import-only``: these alone, and with
  ``--compare-ref`` for both codes, each in a database of its own);
- `tick --all-profiles` throughput with 1, 2 and 4 worker processes, each
  time over CHANGED profiles with a change to render (all PROFILES in the
  database);
- the database's size once every profile is rendered (the capacity figure);
- per-profile render latency (p50, p99);
- cold injection from the store, and the warm path;
- how long until every one of WATCHERS injector processes sees a new block;
- the statements and round trips of one changed profile's tick and of one with nothing to do, counted on the
  wire, and, with ``--compare-ref REF``, the same for commit REF's code beside this one's, with one tick
  worker's renders per second of both interleaved in the same run (``benchmarks.pg_base``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from pipeline import PersonaInjector, PersonaStore, Settings, load_settings, tick
from pipeline.store.postgres.listen import listener_for, stop_listener
from pipeline.store.postgres.pools import close_pool

from .pg_base import checkout, env_for, round_trip_rows, run_importers, throughput_rows
from .pg_wire import Relay

PROFILES = int(os.environ.get("PERSONA_BENCH_PROFILES", "10000"))
FACTS = 50
IMPORTERS = 4
CHANGED = 1000
WATCHERS = 4
ROUNDS = 10
COMPARE_ROUNDS = int(os.environ.get("PERSONA_BENCH_COMPARE_ROUNDS", "3"))
ADMIN_URL = os.environ.get("PERSONA_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REPO = Path(__file__).resolve().parent.parent
TOPICS = ("style", "tools", "git", "writing", "review")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres", description=__doc__.splitlines()[0])
    parser.add_argument("--compare-ref", help="a commit whose code to measure beside this one's, in the same run")
    parser.add_argument("--import-only", action="store_true", help="the import and the sizes it leaves, alone")
    args = parser.parse_args()
    trees = {"this commit": REPO}
    if args.compare_ref:
        trees = {f"{args.compare_ref}": checkout(args.compare_ref), "this commit": REPO}
    rows = imports_only(trees) if args.import_only else everything(trees)
    with psycopg.connect(ADMIN_URL) as admin:
        version = admin.execute("SHOW server_version").fetchone()[0]
    print(f"persona-tier on PostgreSQL {version}: {PROFILES:,} profiles x {FACTS} facts, "
          f"{os.cpu_count()} cores (server and workers share them), load {os.getloadavg()[0]:.1f}")
    print()
    print("| figure | value |")
    print("| --- | ---: |")
    for figure, value in rows:
        print(f"| {figure} | {value} |")


def imports_only(trees: dict[str, Path]) -> list[tuple[str, str]]:
    """Each code's import of the fleet, and the sizes it leaves, in a database of its own (a migration between
    the two codes is no matter here)."""
    rows = []
    for label, tree in trees.items():
        with fresh_database() as url, tempfile.TemporaryDirectory() as tmp:
            rows += [(f"{figure}, {label}", value) for figure, value in bench_import(Path(tmp), url, tree)]
            rows.append((f"stem index, {label}", stem_index_size(url)))
    return rows


@contextmanager
def fresh_database() -> Iterator[str]:
    """The URL of a database of its own, dropped afterwards."""
    database = f"persona_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    url = ADMIN_URL.rsplit("/", 1)[0] + f"/{database}"
    try:
        yield url
    finally:
        stop_listener(url)
        close_pool(url)
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def stem_index_size(url: str) -> str:
    """The proposal check's stem index beside the facts: ``persona_stems`` (one row a stem, before issue 52) or
    ``persona_stem_sets`` (one row a fact), against ``memoria_persona``, each with its indexes."""
    with psycopg.connect(url) as conn:
        index, facts = conn.execute(
            "SELECT COALESCE(pg_total_relation_size(to_regclass('persona_stems')), "
            "pg_total_relation_size(to_regclass('persona_stem_sets'))), "
            "pg_total_relation_size('memoria_persona')").fetchone()
    return (f"{index / 2**20:,.1f} MB, {index / (PROFILES * FACTS):,.0f} bytes a fact, {index / facts:.2f}x "
            f"memoria_persona ({facts / 2**20:,.1f} MB)")


def everything(trees: dict[str, Path]) -> list[tuple[str, str]]:
    """Every figure of the module's list, on this commit's code (and the compared commit's where it says)."""
    rows: list[tuple[str, str]] = []
    with fresh_database() as url, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        config = write_config(work, url)
        rows += bench_import(work, url)
        rows.append(("stem index", stem_index_size(url)))
        rows += bench_ticks(work, url, config)
        rows += bench_codes(work, url, trees)
        rows += bench_latency(url, config)
        rows += bench_injection(url, config)
        rows += bench_propagation(work, url, config)
    return rows


def write_config(work: Path, url: str) -> Path:
    path = work if work.suffix == ".yaml" else work / "persona.yaml"
    path.write_text(f"store:\n  url: {url}\ntargets:\n  markdown:\n    output: store\n"
                    "injection:\n  enabled: true\n  source: store\n  check_interval_ms: 250\n")
    return path


def settings_for(config: Path, profile: str = "default") -> Settings:
    return load_settings(config_files=[config], overrides={"store.profile": profile})


def profile(index: int) -> str:
    return f"user-{index:05d}"


# -- import -----------------------------------------------------------------------------


def bench_import(work: Path, url: str, tree: Path = REPO) -> list[tuple[str, str]]:
    folder = work / "facts"
    folder.mkdir()
    for index in range(PROFILES):
        lines = "".join(f"  - {{topic: {TOPICS[k % len(TOPICS)]}, content: 'Rule {k} of user {index}: "
                        f"keep answers short and concrete'}}\n" for k in range(FACTS))
        (folder / f"{index}.yaml").write_text("facts:\n" + lines)
    subprocess.run([sys.executable, "-c", "import sys; from pipeline import PersonaStore; "
                    "PersonaStore(sys.argv[1]).open()", url], env=env_for(tree), cwd=tree, check=True)
    # (the schema, before the importers race to make it)
    seconds, client, server = run_importers(tree, url, folder,
                                            [list(range(k, PROFILES, IMPORTERS)) for k in range(IMPORTERS)])
    facts = PROFILES * FACTS
    return [(f"import {PROFILES:,} profiles x {FACTS} facts ({IMPORTERS} processes)",
             f"{seconds:.0f} s, {facts / seconds:,.0f} facts/s; CPU per 1,000 facts: importers "
             f"{client * 1000 / facts:.2f} s, server {server * 1000 / facts:.2f} s")]


# -- tick --all-profiles ---------------------------------------------------------------------


def change_profiles(url: str, count: int) -> list[str]:
    """Give ``count`` profiles a store change to render (the rest stay rendered): one fact's text changes and
    the profile's change counter moves, as an edit through persona-tier does, so each render writes a new
    block (a bare counter bump would render the same bytes, which commits without waiting for the disk)."""
    with psycopg.connect(url, autocommit=True) as conn:
        chosen = [row[0] for row in conn.execute(
            "SELECT session_id FROM persona_state ORDER BY random() LIMIT %s", (count,))]
        conn.execute("UPDATE memoria_persona SET content = content || ' (edited)' WHERE id IN (SELECT MIN(id) FROM "
                     "memoria_persona WHERE session_id = ANY(%s) GROUP BY session_id)", (chosen,))
        conn.execute("UPDATE persona_state SET generation = generation + 1 WHERE session_id = ANY(%s)", (chosen,))
    return chosen


def run_workers(config: Path, workers: int, tree: Path = REPO) -> float:
    """Seconds until ``workers`` processes of ``tick --all-profiles`` on ``tree``'s code all finished."""
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "-c", str(config), "tick", "--all-profiles",
                               "--json"], env=env_for(tree), cwd=tree, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
             for _ in range(workers)]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"a tick worker failed: {err}")
    return time.perf_counter() - start


def rendered_since(url: str, after: int) -> int:
    """Renders recorded since run ``after`` (a re-render of unchanged facts is recorded as unchanged)."""
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT COUNT(*) FROM persona_runs WHERE id > %s AND outcome != 'stale'",
                            (after,)).fetchone()[0]


def last_run_id(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT COALESCE(MAX(id), 0) FROM persona_runs").fetchone()[0]


def database_size(url: str) -> tuple[str, str]:
    """The database's size once every profile has its facts, one block and one run: the capacity figure."""
    with psycopg.connect(url) as conn:
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        tables = conn.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relkind = 'r' AND relnamespace = "
            "'public'::regnamespace ORDER BY 2 DESC LIMIT 3").fetchall()
    biggest = ", ".join(f"{name} {size / 2**20:,.0f} MB" for name, size in tables)
    return (f"database size, {PROFILES:,} profiles rendered once",
            f"{total / 2**20:,.0f} MB, {total / PROFILES / 1024:.1f} KB per profile ({biggest})")


def bench_ticks(work: Path, url: str, config: Path) -> list[tuple[str, str]]:
    rows = []
    before = last_run_id(url)
    seconds = run_workers(config, 4)  # the first render of every profile
    rows.append((f"first render of all {PROFILES:,} profiles, 4 workers",
                 f"{seconds:.0f} s, {rendered_since(url, before) / seconds:,.0f} profiles/s"))
    rows.append(database_size(url))
    seconds = run_workers(config, 4)
    rows.append((f"`tick --all-profiles` with nothing to do, 4 workers over {PROFILES:,}",
                 f"{seconds:.1f} s, {PROFILES / seconds:,.0f} profiles/s"))
    base = None
    for workers in (1, 2, 4):
        change_profiles(url, CHANGED)
        before = last_run_id(url)
        seconds = run_workers(config, workers)
        rendered = rendered_since(url, before)
        rate = rendered / seconds
        base = base or rate
        rows.append((f"`tick --all-profiles`, {workers} worker(s), {CHANGED:,} of {PROFILES:,} changed",
                     f"{seconds:.1f} s, {rate:,.0f} renders/s ({rate / base:.2f}x one worker; "
                     f"{rendered:,} rendered)"))
    return rows


def bench_codes(work: Path, url: str, trees: dict[str, Path]) -> list[tuple[str, str]]:
    """Round trips of one profile's tick per code, then (comparing) one worker's renders/s per code, interleaved."""
    parts = urlsplit(url)
    relay = Relay(parts.hostname or "127.0.0.1", parts.port or 5432)
    user = parts.netloc.rpartition("@")[0]
    counted = write_config(work / "counted.yaml", urlunsplit(parts._replace(
        netloc=f"{user}{'@' if user else ''}127.0.0.1:{relay.port}", query="sslmode=disable")))
    try:
        rows = round_trip_rows(trees, relay, counted, lambda count: change_profiles(url, count))
    finally:
        relay.close()
    if len(trees) > 1:
        config = write_config(work / "compare.yaml", url)
        rows += throughput_rows(trees, COMPARE_ROUNDS, lambda tree: _one_worker_rate(url, config, tree))
    return rows


def _one_worker_rate(url: str, config: Path, tree: Path) -> float:
    change_profiles(url, CHANGED)
    before = last_run_id(url)
    seconds = run_workers(config, 1, tree)
    return rendered_since(url, before) / seconds


# -- per-profile latency, injection -----------------------------------------------------------


def bench_latency(url: str, config: Path, samples: int = 300) -> list[tuple[str, str]]:
    change_profiles(url, samples * 3)
    times = []
    settings = settings_for(config)
    with psycopg.connect(url) as conn:
        changed = [row[0] for row in conn.execute(
            "SELECT s.session_id FROM persona_state s WHERE s.generation > (SELECT MAX(r.generation) FROM "
            "persona_runs r WHERE r.session_id = s.session_id) LIMIT %s", (samples,))]
    for name in changed:
        with PersonaStore.from_settings(settings, profile=name) as store:
            start = time.perf_counter()
            tick(settings, store=store)
            times.append(time.perf_counter() - start)
    times.sort()
    p50, p99 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]
    return [(f"render latency per profile ({FACTS} facts), tick of one changed profile",
             f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms ({len(times)} profiles)")]


def bench_injection(url: str, config: Path, samples: int = 200) -> list[tuple[str, str]]:
    cold = []
    for index in range(samples):
        injector = PersonaInjector(settings_for(config, profile(index)))
        start = time.perf_counter_ns()
        text = injector.block()
        cold.append(time.perf_counter_ns() - start)
        if not text:
            raise SystemExit(f"no block injected for {profile(index)}")
        injector.close()
    warm_settings = settings_for(config, profile(0))
    warm_injector = PersonaInjector(warm_settings)
    warm_injector.block()
    listener_for(url, warm_settings.injection.listen_ping_ms).wait_connected(10)
    warm_injector.block()
    calls = 200_000
    start = time.perf_counter_ns()
    for _ in range(calls):
        warm_injector.block()
    warm = (time.perf_counter_ns() - start) / calls
    warm_injector.close()
    return [("cold injection from the store (new injector, block read and capped)",
             f"median {statistics.median(cold) / 1000:.0f} µs, max {max(cold) / 1000:.0f} µs"),
            ("warm injection from the store (listener connected)", f"{warm / 1000:.3f} µs, no query")]


# -- propagation ----------------------------------------------------------------------------------

WATCHER = """
import sys, time
from pipeline import PersonaInjector
from pipeline import load_settings
from pipeline.store.postgres.listen import listener_for, stop_listener
settings = load_settings(config_files=[sys.argv[1]], overrides={"store.profile": sys.argv[2]})
injector = PersonaInjector(settings)
injector.block()
listener_for(settings.store.url, settings.injection.listen_ping_ms).wait_connected(10)
injector.block()
print("ready", flush=True)
for line in sys.stdin:
    marker = line.strip()
    while marker not in injector.block():
        time.sleep(0.0005)
    print(time.time(), flush=True)
"""


def bench_propagation(work: Path, url: str, config: Path) -> list[tuple[str, str]]:
    name = profile(1)
    settings = settings_for(config, name)
    watchers = [subprocess.Popen([sys.executable, "-c", WATCHER, str(config), name], env=env_for(REPO),
                                 cwd=REPO, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True) for _ in range(WATCHERS)]
    for proc in watchers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    delays = []
    for round_ in range(ROUNDS):
        marker = f"Propagation marker {round_} {uuid.uuid4().hex[:6]}"
        for proc in watchers:
            assert proc.stdin is not None
            proc.stdin.write(marker + "\n")
            proc.stdin.flush()
        with PersonaStore.from_settings(settings) as store:
            store.add(marker, topic="style", tier="permanent")
            tick(settings, store=store)
        committed = time.time()
        seen = []
        for proc in watchers:
            assert proc.stdout is not None
            seen.append(float(proc.stdout.readline()))
        delays.append(max(0.0, max(seen) - committed))  # a watcher may see it before tick() returns
    for proc in watchers:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
    return [(f"time until all {WATCHERS} injector processes see a new block (LISTEN/NOTIFY), {ROUNDS} rounds",
             f"median {statistics.median(delays) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms "
             f"(polling fallback bound: check_interval_ms = {settings.injection.check_interval_ms} ms)")]


if __name__ == "__main__":
    main()
