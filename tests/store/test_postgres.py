"""The PostgreSQL backend against the real server: bad input, faults, and many workers on many profiles.

The behaviour every backend shares is tested on both in test_store.py; this
file covers what only a server has: URLs and credentials, timeouts, lost
connections, several processes on one database, and blocks that reach
injectors on other hosts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from pipeline import ConfigError, PersonaInjector, PersonaStore, SessionSnapshots, Settings, StoreError, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call
from pipeline.schedule import tick as ticking
from pipeline.store import POSTGRES
from pipeline.store.postgres.listen import listener_for
from pipeline.store.postgres.pools import close_pool
from pipeline.store.render_rows import persona_sql, state_and_facts

from ..conftest import REPO
from ..support.databases import Db, require_server, server_url
from ..support.tcp_proxy import FreezableProxy

runner = CliRunner()


def config(tmp_path: Path, pg: Db, **extra: object) -> Path:
    """A config file: this test's schema, blocks in the store, injection from the store."""
    lines = [f"store:\n  url: {pg.target}\n", "targets:\n  markdown:\n    output: store\n",
             "injection:\n  enabled: true\n  source: store\n  check_interval_ms: 100\n"]
    lines += [f"{key}: {json.dumps(value)}\n" for key, value in extra.items()]
    path = tmp_path / "persona.yaml"
    path.write_text("".join(lines))
    return path


def env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}


def persona(tmp_path: Path, cfg: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pipeline", "-c", str(cfg), *args], env=env(tmp_path), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def fill_profiles(pg: Db, profiles: int, facts: int) -> list[str]:
    """``profiles`` profiles of ``facts`` facts each, written as another tool would."""
    with pg.store() as store:
        store.open()  # the schema
    pg.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) "
               "SELECT 'p' || lpad(g::text, 4, '0'), 'long_term', 'topic ' || (k % 5), "
               "'Fact ' || k || ' about profile ' || g FROM generate_series(1, ?) g, generate_series(1, ?) k",
               (profiles, facts))
    return [f"p{g:04d}" for g in range(1, profiles + 1)]


def written_runs(pg: Db) -> dict[str, int]:
    return dict(pg.execute("SELECT session_id, COUNT(*) FROM persona_runs WHERE outcome = 'written' "
                           "GROUP BY session_id"))


# -- bad input -------------------------------------------------------------------


def test_an_unknown_scheme_is_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError, match=r"store\.url: .*unknown database scheme 'mysql'"):
        load_settings(overrides={"store.url": "mysql://me@host/db"})


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://postgres@127.0.0.1:1/test", r"cannot connect to PostgreSQL at 127\.0\.0\.1:1 .*is the server "
                                               r"running"),
    ("postgresql://nobody_here@127.0.0.1:5432/test", r"refused user 'nobody_here'"),
    ("postgresql://postgres@127.0.0.1:5432/no_such_db_here", r"no_such_db_here.* does not exist"),
    ("postgresql://postgres@127.0.0.1:notaport/test", r"(?i)store\.url: .*not a valid PostgreSQL URL \(port"),
    ("postgresql://postgres@no-such-host.invalid:5432/test", r"cannot connect to PostgreSQL at no-such-host\.invalid"
                                                             r":5432 .*check store\.url"),
    ("postgresql://postgres@127.0.0.1:5432/test?sslmode=bogus", r"store\.url .* is not a valid PostgreSQL URL: .*"
                                                                r"sslmode"),
])
def test_a_bad_url_or_credentials_is_one_clear_error(url, message):
    require_server()
    result = runner.invoke(app, ["--set", f"store.url={url}", "list"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert re.search(message, result.stderr), result.stderr


def test_a_password_never_appears_in_an_error(pg, tmp_path):
    refused = server_url().replace("postgres@", "postgres:hunter2@", 1).replace(":5432", ":1", 1)
    result = runner.invoke(app, ["--set", f"store.url={refused}", "list"])
    assert result.exit_code == 1 and "hunter2" not in result.output
    for bad in ("mysql://postgres:hunter2@127.0.0.1:5432/x", "postgresql://postgres:hunter2@127.0.0.1:99999/x"):
        result = runner.invoke(app, ["--db", bad, "list"])  # a config error shows the value it refused
        assert result.exit_code == 1 and "invalid configuration: store.url" in result.stderr
        assert "hunter2" not in result.output and "postgres:***@" in result.stderr
    config = tmp_path / "persona.yaml"
    config.write_text("store:\n  url: postgresql://postgres:hunter2@127.0.0.1:70000/x\n")
    result = runner.invoke(app, ["-c", str(config), "list"])
    assert result.exit_code == 1 and "hunter2" not in result.output and f"{config}:2" in result.stderr
    # Passwords a URL should have encoded, or in a parameter: the driver repeats what it cannot parse.
    for url in ("postgresql://postgres@127.0.0.1:5432/x?bogusparam=1&password=Hunter2Q",
                "postgresql://postgres:Hunter2%zz@127.0.0.1:5432/x", "postgresql://postgres:pa ssHunter2@127.0.0.1/x",
                "postgresql://postgres:p@ssHunter2@127.0.0.1:5432/x", "postgresql://postgres:pa/ssHunter2@127.0.0.1/x",
                "postgresql://postgres:pa/ss@Hunter2@127.0.0.1:1/x"):
        result = runner.invoke(app, ["--db", url, "list"])
        assert result.exit_code == 1 and "Hunter2" not in result.output, (url, result.output)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.output
    for shown in (["config", "show"], ["config", "show", "--json", "--sources"]):
        result = runner.invoke(app, ["--db", "postgresql://postgres:hunter2@db.internal/x", *shown])
        assert result.exit_code == 0 and "hunter2" not in result.output and "postgres:***@db.internal" in result.output
    with_password = str(pg.target).replace("postgres@", "postgres:hunter2@", 1)  # trust auth ignores it
    with PersonaStore(with_password, statement_timeout_ms=50) as store, \
            pytest.raises(StoreError) as raised, store.read() as conn:
        conn.execute("SELECT pg_sleep(1)")
    assert "hunter2" not in str(raised.value) and "postgres:***@" in str(raised.value)


def test_a_schema_check_blocked_by_another_session_fails_in_time_instead_of_hanging(pg):
    from pipeline.store.postgres.schema import MIGRATION_LOCK

    with psycopg.connect(str(pg.target), autocommit=True) as holder:
        holder.execute(f"SELECT pg_advisory_lock({MIGRATION_LOCK})")  # another process mid-migration
        result = runner.invoke(app, ["--db", str(pg.target), "--set", "store.busy_timeout_ms=300", "list"])
    # The wait ended by the store's own timeout, not by the other session letting go.
    assert result.exit_code == 1 and "stayed locked for 300 ms" in result.stderr, result.output
    assert runner.invoke(app, ["--db", str(pg.target), "list"]).exit_code == 0  # and it works once released


@pytest.mark.parametrize(("column", "wrong", "needed"), [
    ("session_id", "integer", "text"), ("reinforcement_count", "text", "an integer"),
    ("confidence", "text", "a number"),
])
def test_a_table_with_a_column_of_the_wrong_type_is_refused_before_anything_changes(pg, column, wrong, needed):
    columns = {"id": "bigint PRIMARY KEY", "session_id": "text", "tier": "text", "topic": "text", "content": "text",
               "confidence": "double precision", "source_memory_id": "text", "created_at": "timestamptz",
               "last_reinforced_at": "timestamptz", "reinforcement_count": "integer", "promotion_reason": "text"}
    columns[column] = wrong
    pg.execute(f"CREATE TABLE memoria_persona ({', '.join(f'{name} {kind}' for name, kind in columns.items())})")
    tables = pg.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
    for args in (["add", "x", "--topic", "t"], ["list"]):
        result = runner.invoke(app, ["--db", str(pg.target), *args])
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
        assert f"column memoria_persona.{column} is {wrong}, but persona-tier needs {needed}" in result.stderr
    assert pg.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()") \
        == tables


@pytest.mark.parametrize(("existing", "said"), [
    ("CREATE TABLE persona_blocks (x int)", "already has a table persona_blocks that persona-tier did not make"),
    ("CREATE TABLE persona_schema (id int)", "has a table persona_schema that persona-tier did not make"),
])
def test_a_table_of_ours_made_by_another_tool_is_refused_by_name(pg, existing, said):
    pg.execute(existing)
    result = runner.invoke(app, ["--db", str(pg.target), "list"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1 and said in result.stderr, result.output
    assert [row[0] for row in pg.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")] == [
        existing.split()[2]]  # nothing else was made


def test_a_statement_timeout_is_a_clear_error_and_the_store_still_works(pg):
    with pg.store() as store:  # the fact is written without a tight bound: only the sleep must run past it
        store.add("kept", topic="t")
    with pg.store(statement_timeout_ms=100) as store:
        with pytest.raises(StoreError, match=r"ran past store\.statement_timeout_ms \(100 ms\).*nothing was changed"), \
                store.transaction() as conn:
            conn.execute("UPDATE memoria_persona SET content = 'lost' WHERE content = 'kept'")
            conn.execute("SELECT pg_sleep(2)")
        assert [fact.content for fact in store.list()] == ["kept"]


def test_text_the_server_cannot_hold_is_refused_with_nothing_written(pg):
    # PostgreSQL text cannot hold NUL; a topic from another tool's metadata may carry one.
    with pg.store() as store:
        store.add("kept", topic="t")
        pg.add_memory("m1", "Likes tea", metadata='{"topic": "a\\u0000b"}')
        with pytest.raises(StoreError, match="a value is out of range or malformed"):
            store.promote("m1")
        assert [fact.content for fact in store.list()] == ["kept"] and store.generation() == 1


# -- faults ---------------------------------------------------------------------------


def kill_connections(pg: Db) -> int:
    """Terminate every other connection to the test's schema, as a server restart would (only the test's own:
    another run on the shared server is left alone). Each termination is waited for (up to 10 s), as a restart
    is over before the next operation: without the wait, a loaded machine let that operation start on a
    connection whose backend was still going, and end with it."""
    with psycopg.connect(server_url(), autocommit=True) as conn:
        return conn.execute("SELECT COUNT(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity WHERE datname = "
                            "current_database() AND pid != pg_backend_pid() AND backend_type = 'client backend' "
                            "AND application_name = %s", (pg.schema,)).fetchone()[0]


def test_a_lost_connection_is_replaced_by_the_next_operation(pg):
    with pg.store() as store:
        store.add("before", topic="t")
        assert kill_connections(pg) >= 1
        store.add("after", topic="t")  # the pool drops the dead connection and opens another
        assert sorted(fact.content for fact in store.list()) == ["after", "before"]


@pytest.mark.parametrize("operation", ["a read", "a write"])
def test_a_statement_on_a_connection_ended_before_it_arrived_is_retried_once_on_a_fresh_one(pg, operation):
    # The window made wide: the proxy keeps the client's side open after the server's is gone, so the pool
    # lends the connection as live and the statement is the first to find it dead, with nothing sent on.
    with FreezableProxy(lifetime_s=120) as proxy:
        url = proxy.url(str(pg.target))
        try:
            with PersonaStore(url) as store:
                store.add("before", topic="t")
                proxy.end_quietly()
                if operation == "a write":
                    store.add("after", topic="t")
                assert sorted(fact.content for fact in store.list()) == sorted({"before", "after"} if operation
                                                                               == "a write" else {"before"})
        finally:
            close_pool(url)
    assert sorted(row[0] for row in pg.execute("SELECT content FROM memoria_persona")) == (
        ["after", "before"] if operation == "a write" else ["before"])  # once: the retried write is not doubled


@pytest.mark.slow
def test_a_server_restart_mid_tick_loses_no_render_and_duplicates_nothing(tmp_path, pg):
    names = fill_profiles(pg, 60, 10)
    cfg = config(tmp_path, pg)
    worker = persona(tmp_path, cfg, "tick", "--all-profiles", "--json")
    deadline = time.monotonic() + 120
    while sum(written_runs(pg).values()) < 15 and time.monotonic() < deadline:
        time.sleep(0.05)
    killed = kill_connections(pg)  # mid-run: some profiles done, the rest still to come
    out, err = worker.communicate(timeout=300)
    assert worker.returncode == 0, err
    ticks = json.loads(out)
    # A tick whose connection died after its commit is retried and finds its own render done.
    assert killed >= 1 and all(t["outcome"] == "rendered" or (t["outcome"] == "nothing to do" and t["attempts"] > 1)
                               for t in ticks), [t for t in ticks if t["outcome"] != "rendered"]
    assert written_runs(pg) == dict.fromkeys(names, 1)  # every profile exactly once
    assert pg.execute("SELECT COUNT(*) FROM persona_blocks")[0][0] == len(names)


def test_more_threads_ticking_at_once_than_the_pool_holds_all_finish(tmp_path, pg):
    # A host's threads (a gateway's turns) each tick: a tick holding one pooled connection while waiting
    # for another once starved a process of 8 or more such threads.
    names = fill_profiles(pg, 24, 3)
    settings = load_settings(config_files=[config(tmp_path, pg)])
    start, outcomes = threading.Barrier(len(names)), {}

    def work(name: str) -> None:
        with PersonaStore.from_settings(settings, profile=name) as store:
            start.wait()
            try:
                outcomes[name] = ticking.tick(settings, store=store).rendered
            except StoreError as error:
                outcomes[name] = str(error)

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert outcomes == dict.fromkeys(names, True)
    assert written_runs(pg) == dict.fromkeys(names, 1)


PROMOTER = """
import sys, time
from pipeline import PersonaStore
url, start = sys.argv[1], float(sys.argv[2])
with PersonaStore(url) as store:
    store.open()
    time.sleep(max(0.0, start - time.time()))
    print(int(store.promote("m1").created))
"""


@pytest.mark.slow
def test_four_hosts_promoting_the_same_memory_at_once_make_one_row(tmp_path, pg):
    with pg.store() as store:
        store.open()
    pg.add_memory("m1", "Uses uv, never pip.")
    start = time.time() + 3
    procs = [subprocess.Popen([sys.executable, "-c", PROMOTER, str(pg.target), str(start)], env=env(tmp_path),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    created = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        created.append(int(out))
    assert sorted(created) == [0, 0, 0, 1]
    assert pg.execute("SELECT COUNT(*) FROM memoria_persona WHERE source_memory_id = 'm1'")[0][0] == 1


@pytest.mark.slow
def test_two_workers_on_the_same_profile_render_it_once(tmp_path, pg):
    fill_profiles(pg, 1, 200)
    cfg = config(tmp_path, pg)
    workers = [persona(tmp_path, cfg, "tick", "--profile", "p0001", "--json") for _ in range(2)]
    results = []
    for proc in workers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        results.append(json.loads(out)["rendered"])
    assert sorted(results) == [False, True]  # the second waited for the lock, then found nothing to do
    assert written_runs(pg) == {"p0001": 1}


# -- many workers, many profiles ----------------------------------------------------------


@pytest.mark.slow
def test_four_workers_share_200_profiles_each_rendered_once(tmp_path, pg):
    names = fill_profiles(pg, 200, 8)
    cfg = config(tmp_path, pg)
    workers = [persona(tmp_path, cfg, "tick", "--all-profiles", "--json") for _ in range(4)]
    rendered_by: dict[str, list[int]] = {}
    for index, proc in enumerate(workers):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        for tick in json.loads(out):
            if tick["outcome"] == "rendered":
                rendered_by.setdefault(tick["profile"], []).append(index)
    assert written_runs(pg) == dict.fromkeys(names, 1)
    assert sorted(rendered_by) == names and all(len(who) == 1 for who in rendered_by.values())
    assert len({who[0] for who in rendered_by.values()}) > 1  # the work was shared, not done by one worker


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing(tmp_path, pg):
    names = fill_profiles(pg, 200, 8)
    cfg = config(tmp_path, pg)
    workers = [persona(tmp_path, cfg, "tick", "--all-profiles") for _ in range(4)]
    deadline = time.monotonic() + 120
    while sum(written_runs(pg).values()) < 20 and time.monotonic() < deadline:
        time.sleep(0.02)
    workers[0].send_signal(signal.SIGKILL)
    for proc in workers[1:]:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    workers[0].communicate(timeout=30)
    # The next tick renders whatever the dead worker held; no lock outlives it.
    again = persona(tmp_path, cfg, "tick", "--all-profiles", "--json")
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert not [t for t in json.loads(out) if t["outcome"] in ("busy", "failed")]
    assert written_runs(pg) == dict.fromkeys(names, 1)


# -- blocks reach every host --------------------------------------------------------------------

WATCHER = """
import sys, time
from pipeline import PersonaInjector
from pipeline import SessionSnapshots
from pipeline import Settings, load_settings
settings = load_settings(config_files=[sys.argv[1]], overrides={"store.profile": sys.argv[2]})
injector = PersonaInjector(settings)
print("ready " + str(int("Answers tersely" in injector.block())), flush=True)
while "Never force-push" not in injector.block():
    time.sleep(0.005)
print("seen", time.time(), flush=True)
"""


def alice_rendered(tmp_path: Path, pg: Db) -> tuple[Path, Settings]:
    """A config on this test's schema, and profile alice with one fact, rendered into the store."""
    cfg = config(tmp_path, pg)
    settings = load_settings(config_files=[cfg], overrides={"store.profile": "alice"})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely", topic="style")
    assert runner.invoke(app, ["-c", str(cfg), "tick", "--profile", "alice"]).exit_code == 0
    return cfg, settings


def test_a_promote_and_render_reach_two_injector_processes(tmp_path, pg):
    """Both running injectors show the promoted fact without a restart (how soon is `make bench-pg`'s
    propagation figure: a wall clock in a test measures the machine's load, not the code)."""
    cfg, settings = alice_rendered(tmp_path, pg)
    watchers = [subprocess.Popen([sys.executable, "-c", WATCHER, str(cfg), "alice"], env=env(tmp_path),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in watchers:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready 1"
    pg.add_memory("m1", "Never force-push", metadata='{"topic": "git"}')
    with PersonaStore.from_settings(settings) as store:
        store.promote("m1")
    rendered = runner.invoke(app, ["-c", str(cfg), "tick", "--profile", "alice"])
    assert rendered.exit_code == 0, rendered.output
    for proc in watchers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.split()[-2] == "seen", err


def test_the_warm_path_makes_no_query(pg, tmp_path):
    _, settings = alice_rendered(tmp_path, pg)
    injector = PersonaInjector(settings)
    assert "Answers tersely" in injector.block()
    assert listener_for(str(pg.target), settings.injection.listen_ping_ms).wait_connected(10)
    injector.block()  # the first answer from a connected listener is taken once
    queries = []
    original = psycopg.Connection.execute

    def counting(self, *args, **kwargs):
        queries.append(args[0])
        return original(self, *args, **kwargs)

    psycopg.Connection.execute = counting
    try:
        for _ in range(1000):
            assert "Answers tersely" in injector.block()
    finally:
        psycopg.Connection.execute = original
    assert queries == []
    injector.close()


def test_an_unreachable_server_never_breaks_the_prompt(tmp_path, pg):
    _, settings = alice_rendered(tmp_path, pg)
    injector = PersonaInjector(settings)
    first = injector.block()
    gone = settings.model_copy(update={"store": settings.store.model_copy(
        update={"url": str(pg.target).replace("127.0.0.1:5432", "127.0.0.1:1")})})
    assert PersonaInjector(gone).block() == ""  # nothing known yet: nothing injected, one warning
    kill_connections(pg)
    assert injector.block() == first  # the last good block, whatever the server does
    threading.Event().wait(0.2)
    assert injector.block() == first



# -- every surface on the server ---------------------------------------------------------------


def test_every_command_works_on_the_server(tmp_path, pg):
    cfg = config(tmp_path, pg)
    base = ["-c", str(cfg), "--set", f"injection.file={tmp_path / 'unused.md'}"]

    def persona_ok(*args: str) -> str:
        result = runner.invoke(app, [*base, *args])
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    with PersonaStore(pg.target) as store:
        store.open()
    pg.add_memory("m1", "Prefers British spelling.", metadata='{"topic": "writing"}')
    facts = tmp_path / "facts.yaml"
    facts.write_text("facts:\n  - {topic: style, content: Answers tersely., tier: permanent}\n")
    persona_ok("import", str(facts))
    persona_ok("add", "Uses uv, never pip.", "--topic", "tools")
    persona_ok("promote", "m1")
    listed = json.loads(persona_ok("list", "--json"))
    assert sorted(fact["content"] for fact in listed) == ["Answers tersely.", "Prefers British spelling.",
                                                          "Uses uv, never pip."]
    uv = next(fact["id"] for fact in listed if fact["content"].startswith("Uses uv"))
    persona_ok("reinforce", str(uv))
    persona_ok("render")
    assert "Answers tersely." in persona_ok("inject")
    persona_ok("demote", str(uv))
    assert "store_changed" in persona_ok("status")
    persona_ok("tick")
    assert "Uses uv" not in persona_ok("inject")
    assert "Answers tersely." in persona_ok("explain")
    persona_ok("retention", "--dry-run")


def test_tools_and_session_snapshots_read_the_stored_block(tmp_path, pg):
    settings = load_settings(config_files=[config(tmp_path, pg)], overrides={"store.profile": "alice"})
    tools = {tool.__name__: tool for tool in PersonaTools(lambda: settings).all()}
    assert call(tools, "persona_add", {"content": "Answers tersely", "topic": "style"})["status"] == "ok"
    with SessionSnapshots(settings) as snapshots:
        first = snapshots.snapshot("chat-1")  # no block yet: the cold start renders one into the store
        assert "Answers tersely" in first.text and first.generation == 1
        call(tools, "persona_add", {"content": "Never force-push", "topic": "git"})
        call(tools, "persona_render", {})
        assert snapshots.snapshot("chat-1").text == first.text  # a running session keeps its persona ...
        refreshed = snapshots.refresh_at_compaction("chat-1")
        assert refreshed.changed and "Never force-push" in refreshed.text  # ... until its compaction
    preview = call(tools, "persona_inject_preview", {})
    assert "Never force-push" in preview["block"]


def test_db_takes_a_url_and_a_path_overrides_a_configured_url(tmp_path, pg):
    with pg.store() as store:
        store.add("On the server.", topic="t")
    on_server = runner.invoke(app, ["--db", str(pg.target), "list", "--json"])
    assert on_server.exit_code == 0 and "On the server." in on_server.stdout
    cfg = config(tmp_path, pg)
    local = runner.invoke(app, ["-c", str(cfg), "--db", str(tmp_path / "local.db"), "list", "--json"])
    assert local.exit_code == 0 and json.loads(local.stdout) == []


PER_PROFILE_QUERIES = {
    "facts": (persona_sql(POSTGRES), ("2026-01-01 00:00:00", "alice")),
    "state and facts": (state_and_facts(POSTGRES), ("alice",) * 4 + ("2026-01-01 00:00:00", "alice")),
    "generation": ("SELECT generation FROM persona_state WHERE session_id = ?", ("alice",)),
    "last run": ("SELECT run_at FROM persona_runs WHERE session_id = ? AND outcome != 'stale' ORDER BY id DESC "
                 "LIMIT 1", ("alice",)),
    "block": ("SELECT text FROM persona_blocks WHERE profile = ? AND target = ?", ("alice", "markdown")),
    "snapshot": ("SELECT text FROM persona_snapshots WHERE profile = ? AND session_id = ? AND target = ?",
                 ("alice", "s1", "markdown")),
    "tombstone": ("SELECT 1 FROM memoria_preferences WHERE session_id = ? AND source_memory_id = ? AND evolution = "
                  "'persona_tombstone'", ("alice", "m1")),
    "new memories": ("SELECT 1 FROM working_memory WHERE session_id = ? AND rowid > ? LIMIT 50", ("alice", 0)),
}


@pytest.mark.parametrize("name", sorted(PER_PROFILE_QUERIES))
def test_every_per_profile_query_has_an_index_starting_with_the_profile(pg, name):
    # With scans forbidden, a query with no usable index still scans; each of these must not.
    with pg.store() as store:
        store.open()
    sql, params = PER_PROFILE_QUERIES[name]
    plan = "\n".join(pg.explain_without_scans(sql, params))
    assert "Seq Scan" not in plan and "Index" in plan, plan
