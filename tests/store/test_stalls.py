"""One slow call never stalls every user: a frozen PostgreSQL server, and a worker stopped while holding a lock.

The server is frozen through a loopback proxy (``tests/support/tcp_proxy.py``) that
stops forwarding bytes without closing a socket, as a hung server or a
black-holed network does; the machine's shared server is never touched. The
bounds asserted are generous and documented in the README (PostgreSQL,
"Errors and timeouts"): the prompt path gives up on a silent server after
``injection.timeout_ms`` + 1 s (3 s by default), a tick after
``store.statement_timeout_ms`` + 1 s per statement, and a stopped worker's
lock is freed by the server after ``store.lock_lease_ms``.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from pipeline import PersonaInjector, PersonaStore, Settings, load_settings, tick
from pipeline.cli import app
from pipeline.store.postgres.listen import listener_for, stop_listener
from pipeline.store.postgres.pools import close_pool

from ..conftest import REPO
from ..support.databases import Db
from ..support.tcp_proxy import FreezableProxy

pytestmark = pytest.mark.slow  # a frozen server and held locks: each test waits out real bounds
runner = CliRunner()
FREEZE_S = 30.0  # how long a freeze lasts at most; every bound below is far shorter
BOUND_S = 10.0  # what every stalled call must finish within, while the server stays frozen
ALICE, BOB = "Alice answers tersely.", "Bob writes British English."


@pytest.fixture
def proxy(pg: Db) -> Iterator[FreezableProxy]:
    with FreezableProxy(lifetime_s=180, max_freeze_s=FREEZE_S) as running:
        yield running
        url = running.url(str(pg.target))
        stop_listener(url)
        close_pool(url)


def seed(pg: Db, tmp_path: Path) -> None:
    """Alice's and Bob's facts, each rendered into the store straight from the server (no proxy)."""
    cfg = write_config(tmp_path / "seed.yaml", str(pg.target))
    for profile, fact in (("alice", ALICE), ("bob", BOB)):
        settings = load_settings(config_files=[cfg], overrides={"store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            store.add(fact, topic="style")
            assert tick(settings, store=store).rendered


def write_config(path: Path, url: str, *extra: str) -> Path:
    """Blocks in the store, injected from the store, as a multi-user gateway runs."""
    path.write_text(f"store:\n  url: {url}\n" + "".join(f"  {line}\n" for line in extra)
                    + "targets:\n  markdown:\n    output: store\n"
                    "injection:\n  enabled: true\n  source: store\n  check_interval_ms: 100\n")
    return path


def proxied(proxy: FreezableProxy, pg: Db, tmp_path: Path, profile: str, **overrides: Any) -> Settings:
    cfg = write_config(tmp_path / "proxied.yaml", proxy.url(str(pg.target)))
    return load_settings(config_files=[cfg], overrides={"store.profile": profile, **overrides})


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call``'s result and how long it took, run on a host-like thread so a hang cannot hang the test."""
    box: dict[str, Any] = {}

    def run() -> None:
        box["value"] = call()

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(FREEZE_S + 10)
    assert not thread.is_alive(), f"still waiting after {FREEZE_S + 10:g} s"
    return box["value"], time.monotonic() - started


def session_injector(settings: Settings, session_id: str) -> PersonaInjector:
    return PersonaInjector(settings.model_copy(update={"injection": settings.injection.model_copy(
        update={"mode": "session"})}), session_id=session_id)


# -- the prompt path while the server is frozen -------------------------------------------------------------------


def test_warm_sessions_are_answered_from_memory_while_the_server_is_frozen(tmp_path, pg, proxy):
    seed(pg, tmp_path)
    alice = proxied(proxy, pg, tmp_path, "alice")
    warm_session, warm_live = session_injector(alice, "a-1"), PersonaInjector(alice)
    given = warm_session.block(), warm_live.block()
    assert all(ALICE in text and BOB not in text for text in given)
    # The live injector hears of new blocks from the listener; without it, it polls (bounded, see the cold test).
    assert listener_for(proxy.url(str(pg.target)), alice.injection.listen_ping_ms).wait_connected(10)
    proxy.freeze()
    for _ in range(3):  # past the injector's check interval, too
        for injector, before in zip((warm_session, warm_live), given, strict=True):
            text, took = timed(injector.block)
            assert text == before and took < BOUND_S
        time.sleep(0.15)


def test_another_users_cold_request_returns_nothing_with_one_warning_within_the_bound(tmp_path, pg, proxy, caplog):
    seed(pg, tmp_path)
    alice, bob = proxied(proxy, pg, tmp_path, "alice"), proxied(proxy, pg, tmp_path, "bob")
    warm = session_injector(alice, "a-1")
    assert ALICE in warm.block()
    proxy.freeze()
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        cold = [timed(session_injector(bob, "b-1").block), timed(PersonaInjector(bob).block)]
        answered = timed(warm.block)
    assert [text for text, _ in cold] == ["", ""]  # nothing known yet, and never alice's persona
    assert all(took < BOUND_S for _, took in [*cold, answered]) and ALICE in answered[0]
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said and all("did not answer" in m or "stopped answering" in m for m in said), said
    assert all(ALICE not in m and BOB not in m for m in said)
    proxy.thaw()
    assert BOB in _eventually(lambda: PersonaInjector(bob).block())


def _eventually(read: Callable[[], str], within_s: float = 20.0) -> str:
    """Once the server answers again (after the few seconds a silent URL is left alone), the text comes back."""
    deadline = time.monotonic() + within_s
    while (text := read()) == "" and time.monotonic() < deadline:
        time.sleep(0.5)
    return text


# -- persona tick against a frozen server ---------------------------------------------------------------------------


def env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("args", [["tick", "--profile", "alice", "--force"], ["tick", "--all-profiles", "--force"]])
def test_tick_from_cron_against_a_frozen_server_fails_in_bounded_time_with_one_line(tmp_path, pg, proxy, args):
    seed(pg, tmp_path)
    cfg = write_config(tmp_path / "cron.yaml", proxy.url(str(pg.target)), "statement_timeout_ms: 3000")
    proxy.freeze()
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pipeline", "-c", str(cfg), *args], env=env(tmp_path), cwd=REPO,
                          capture_output=True, text=True, timeout=FREEZE_S + 30)
    took = time.monotonic() - started
    assert done.returncode == 1 and took < BOUND_S, (took, done.stdout, done.stderr)
    said = done.stderr.strip().splitlines() + [line for line in done.stdout.splitlines() if "failed" in line]
    assert "Traceback" not in done.stderr and any("PostgreSQL at 127.0.0.1" in line for line in said), said
    proxy.thaw()
    assert {row[0] for row in pg.execute("SELECT content FROM memoria_persona")} == {ALICE, BOB}  # nothing lost


def test_a_tick_on_an_open_connection_gives_up_when_the_server_freezes(tmp_path, pg, proxy):
    seed(pg, tmp_path)
    cfg = write_config(tmp_path / "cron.yaml", proxy.url(str(pg.target)), "statement_timeout_ms: 3000")
    assert runner.invoke(app, ["-c", str(cfg), "tick", "--profile", "alice", "--force"]).exit_code == 0
    proxy.freeze()  # the pool's connections are established: only the watchdog can end the wait
    result, took = timed(lambda: runner.invoke(app, ["-c", str(cfg), "tick", "--profile", "alice", "--force"]))
    assert result.exit_code == 1 and took < BOUND_S, (took, result.output)
    assert "did not answer within 4000 ms" in result.stderr and len(result.stderr.strip().splitlines()) == 1


# -- a worker that stops without dying -------------------------------------------------------------------------------

HOLDER = """
import sys, time
from pipeline import PersonaStore
target, profile, lease = sys.argv[1], sys.argv[2], int(sys.argv[3])
with PersonaStore(target, profile=profile, lock_lease_ms=lease, statement_timeout_ms=30000) as store:
    with store.profile_lock(0) as held:
        print("held" if held else "busy", flush=True)
        time.sleep(120)
"""


def hold_tick_lock(tmp_path: Path, target: str, profile: str, lease_ms: int) -> subprocess.Popen[str]:
    """Another worker, in a process of its own, in the middle of profile's tick (it holds the tick lock)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, target, profile, str(lease_ms)], env=env(tmp_path),
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def end(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGCONT)
    process.kill()
    process.wait(timeout=10)


def outcomes(cfg: Path) -> dict[str, str]:
    result = runner.invoke(app, ["-c", str(cfg), "tick", "--all-profiles", "--force"])
    return dict(line.split(": ", 1) for line in result.stdout.splitlines() if line.startswith(("alice:", "bob:")))


def test_a_stopped_worker_holding_a_profile_does_not_block_it_beyond_the_lease(tmp_path, pg):
    seed(pg, tmp_path)
    cfg = write_config(tmp_path / "worker.yaml", str(pg.target), "lock_lease_ms: 3000")
    holder = hold_tick_lock(tmp_path, str(pg.target), "alice", 3000)
    try:
        time.sleep(7)  # over two leases: a live holder's heartbeat keeps its lock
        seen = outcomes(cfg)
        assert seen == {"alice": "busy", "bob": "rendered"}, seen
        holder.send_signal(signal.SIGSTOP)
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "pipeline", "-c", str(cfg), "tick", "--profile", "alice",
                                 "--force"], env=env(tmp_path), cwd=REPO, capture_output=True, text=True,
                                timeout=150)
        took = time.monotonic() - started
        assert result.returncode == 0 and took < BOUND_S, (took, result.stderr)
        seen = outcomes(cfg)
        assert seen == {"alice": "rendered", "bob": "rendered"}, seen
    finally:
        end(holder)


def test_a_cold_start_never_waits_on_another_workers_tick_lock(tmp_path, database, caplog):
    with PersonaStore(database.target, profile="bob") as store:
        store.add(BOB, topic="style")  # facts, but no block yet: the first prompt would render one
    cfg = (write_config(tmp_path / "cold.yaml", str(database.target)) if database.is_postgres
           else _sqlite_config(tmp_path, database))
    settings = load_settings(config_files=[cfg], overrides={"store.profile": "bob"})
    holder = hold_tick_lock(tmp_path, str(database.target), "bob", 60_000)
    try:
        with caplog.at_level(logging.WARNING, logger="pipeline"):
            text, took = timed(session_injector(settings, "b-1").block)
    finally:
        end(holder)
    assert text == "" and took < BOUND_S
    assert any("another persona tick" in r.getMessage() for r in caplog.records), caplog.text
    assert BOB in session_injector(settings, "b-2").block()  # with the lock free, the cold start renders


def _sqlite_config(tmp_path: Path, db: Db) -> Path:
    path = tmp_path / "cold.yaml"
    path.write_text(f"store:\n  path: {db.target}\ninjection:\n  enabled: true\n  file: {tmp_path / '{profile}.md'}\n")
    return path
