"""Real processes writing and reading at once: the persona file, and the store."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing

import pytest

from pipeline import PersonaStore, resolve_target, run_pipeline
from pipeline.store.runs import newest_generation

from ..conftest import REPO, add_memory, python, write
from ..support.workers import settings_for

pytestmark = pytest.mark.slow  # real processes racing each other
FRAMED = "BEGIN\n{% for s in persona.sections %}## {{ s.topic }}\n{% for i in s.items %}- {{ i.text }}\n{% endfor %}" \
         "{% endfor %}END\n"


def spawn(*args: str) -> subprocess.Popen:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ["HOME"], "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.support.workers", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_four_writers_and_a_reader_never_tear_and_the_newest_wins(tmp_path):
    write(tmp_path / "templates" / "framed.j2", FRAMED)
    settings = settings_for(tmp_path)
    with PersonaStore.from_settings(settings) as store:
        store.list()  # create the schema before the race
    stop = tmp_path / "stop"
    reader = spawn("reader", str(tmp_path), str(stop))
    writers = [spawn("writer", str(tmp_path), f"w{k}", "15") for k in range(4)]
    for proc in writers:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    stop.touch()
    out, err = reader.communicate(timeout=60)
    reads, torn = map(int, out.split())
    assert reads > 0 and torn == 0, err
    with PersonaStore.from_settings(settings) as store:
        assert store.generation() == 60
        fresh = run_pipeline(settings, store=store, dry_run=True)[0]
    on_disk = (tmp_path / "out" / "persona.md").read_text()
    assert on_disk == fresh.text and not fresh.changed
    with PersonaStore.from_settings(settings) as store:
        assert newest_generation(store, resolve_target(settings, "markdown").path) == 60


def test_one_profiles_tick_lock_never_holds_up_another_profile(database):
    """A gateway's users share one database: alice's render must not make bob's cold start wait or fail."""
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob, \
            database.store(profile="alice") as alice_again:
        alice.open(), bob.open(), alice_again.open()
        with alice.profile_lock(0) as held:
            assert held
            with bob.profile_lock(0) as bob_held:
                assert bob_held  # another profile: free at once
            with alice_again.profile_lock(0) as twice:
                assert not twice  # the same profile: one tick at a time


# -- concurrent store writes -----------------------------------------------------


REINFORCER = """
import sys, time
from pathlib import Path
from pipeline import PersonaStore
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
with PersonaStore(Path(sys.argv[1]), busy_timeout_ms=60000) as store:
    for _ in range(int(sys.argv[3])):
        store.reinforce(1)
"""


def test_four_processes_reinforcing_one_fact_lose_no_update(db, tmp_path):
    with PersonaStore(db) as store:
        store.add("Answers tersely.", topic="style")
    go = tmp_path / "go"
    procs = [python(REINFORCER, str(db), str(go), "1000") for _ in range(4)]
    go.touch()
    for proc in procs:
        _, err = proc.communicate(timeout=150)
        assert proc.returncode == 0, err
    with PersonaStore(db) as store:
        fact = store.get(1)
        assert fact.reinforcement_count == 4000
        assert store.generation() == 4001


PROMOTER = """
import json, sys, time
from pathlib import Path
from pipeline import PersonaStore
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
with PersonaStore(Path(sys.argv[1]), busy_timeout_ms=60000) as store:
    print(json.dumps([store.promote(f"m{i}").created for i in range(20)]))
"""


def test_concurrent_promotes_of_the_same_memory_make_one_row(db, tmp_path):
    with PersonaStore(db) as store:
        store.list()
    for i in range(20):
        add_memory(db, f"m{i}", f"memory {i}")
    go = tmp_path / "go"
    procs = [python(PROMOTER, str(db), str(go)) for _ in range(4)]
    go.touch()
    created = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert [sum(column) for column in zip(*created, strict=True)] == [1] * 20  # exactly one creator per memory
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*), COUNT(DISTINCT source_memory_id) FROM memoria_persona").fetchone() \
            == (20, 20)


def test_a_new_database_opened_while_another_connection_holds_it_waits_instead_of_failing(db):
    """Two gateway users' first writes open the new file at the same moment: SQLite refuses the switch to
    write-ahead logging at once (no busy handler) while the other holds it, so the opener must wait its turn."""
    db.touch(mode=0o600)  # the other opener has just created it
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # what the other opener holds mid-switch: refused at once, unlike a read
    releasing = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    releasing.start()
    try:
        with PersonaStore(db, profile="alice") as store:
            store.add("Answers tersely.", topic="style")
            assert [fact.content for fact in store.list()] == ["Answers tersely."]
    finally:
        releasing.join()
        holder.close()
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
