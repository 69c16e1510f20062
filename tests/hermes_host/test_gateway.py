"""Many chat users through the REAL `hermes gateway` (hermes-agent 0.19, API-server platform), issue #22.

The gateway runs as its own process, bound to 127.0.0.1 with an API key, against the fake model on loopback,
with Mnemosyne installed and the persona plugin beside it, and ``hermes.profile: user_or_session_key``. Clients
name themselves with ``X-Hermes-Session-Key``, one after another and concurrently; every system prompt the
fake model receives must carry its own user's persona and no other user's. Once with the SQLite store, once
with the PostgreSQL store (a schema of its own). Every wait is bounded; the gateway is stopped at the end.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.databases import open_database

from .fake_llm import FakeLLM
from .harness import VENV_BIN, Home, filler, hermes_env, make_home

HEADER = "# L3 Persona (Active Behavioral Rules)"
API_KEY = "sk-gateway-test-key"
USERS = {"alice": "Alice is diabetic; remind her about insulin.",
         "bob": "Bob plays the cello on Sundays.",
         "carol": "Carol writes all her code in Rust."}
LATER = {"alice": "Alice now prefers metric units.", "bob": "Bob has switched to the viola."}
SEQUENTIAL, CONCURRENT = 4, 8  # per user: 3 users x 12 = 36 requests


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def persona(home: Home, *args: str) -> str:
    done = subprocess.run([str(VENV_BIN / "persona"), *args], env=hermes_env(home), capture_output=True,
                          text=True, timeout=120, cwd=str(home.root))
    assert done.returncode == 0, f"persona {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def give(home: Home, facts: dict[str, str]) -> None:
    for user, fact in facts.items():
        persona(home, "add", fact, "--topic", "care", "--profile", f"key:{user}-channel")
        persona(home, "render", "--profile", f"key:{user}-channel")


@contextmanager
def gateway(home: Home, port: int) -> Iterator[subprocess.Popen[bytes]]:
    env = hermes_env(home, API_SERVER_ENABLED="true", API_SERVER_KEY=API_KEY, API_SERVER_HOST="127.0.0.1",
                     API_SERVER_PORT=str(port))
    log = (home.root / "gateway.log").open("wb")
    process = subprocess.Popen([str(VENV_BIN / "hermes"), "gateway", "run", "--force"], env=env, stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(home.root / "work"))
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (home.root / "gateway.log").read_text()[-4000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            assert time.monotonic() < deadline, (home.root / "gateway.log").read_text()[-4000:]
            time.sleep(0.5)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def ask(port: int, user: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    body = json.dumps({"model": "fake-model", "messages": messages}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json",
                                              "X-Hermes-Session-Key": f"{user}-channel"})
    with urllib.request.urlopen(request, timeout=180) as answer:
        assert answer.status == 200
        return json.loads(answer.read())


def opening(user: str, index: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"[{user}] hello number {index}"}]


def system_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def chats_of(server: FakeLLM, user: str) -> list[dict[str, Any]]:
    """The agent's chat requests made for ``user``'s client (its first user message names it)."""
    found = []
    for request in server.chat_requests():
        users = [m for m in request["body"]["messages"] if m.get("role") == "user"]
        if users and str(users[0].get("content", "")).startswith(f"[{user}]"):
            found.append(request["body"])
    return found


def own_persona_only(body: dict[str, Any], user: str, facts: dict[str, str]) -> None:
    text = system_of(body)
    assert HEADER in text and facts[user] in text, text[-1500:]
    for other in USERS:
        if other != user:
            assert USERS[other] not in text and LATER.get(other, "\0") not in text


def run_gateway(tmp_path: Path, store_url: str | None) -> None:
    server = FakeLLM().start()
    try:
        home = make_home(server.base_url, tmp_path, mnemosyne=True,
                         extra={"gateway": {"api_server": {"max_concurrent_runs": 64}}})
        config = "hermes:\n  profile: user_or_session_key\n"
        if store_url:
            config += f"store:\n  url: '{store_url}'\n"
        (home.home / "mnemosyne").mkdir(exist_ok=True)
        (home.home / "mnemosyne" / "persona.yaml").write_text(config)
        give(home, USERS)
        scoped(home)
        persona(home, "hermes", "install", "--activate")
        port = free_port()
        with gateway(home, port):
            for index in range(SEQUENTIAL):
                for user in USERS:
                    ask(port, user, opening(user, index))
            jobs = [(user, SEQUENTIAL + index) for index in range(CONCURRENT) for user in USERS]
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda job: ask(port, job[0], opening(*job)), jobs))
            total = sum(len(chats_of(server, user)) for user in USERS)
            assert total >= 36, total
            for user in USERS:
                bodies = chats_of(server, user)
                assert len(bodies) >= SEQUENTIAL + CONCURRENT
                for body in bodies:
                    own_persona_only(body, user, USERS)
                    # The gateway's directory is the server's, not the user's: no project's facts; the hermes
                    # agent's facts, the user's own, do arrive.
                    assert project_fact(user) not in system_of(body) and hermes_fact(user) in system_of(body)
            compaction(server, home, port)
        assert "Traceback" not in (home.root / "gateway.log").read_text()
    finally:
        server.stop()


def project_fact(user: str) -> str:
    return f"[{user}] Uses the server checkout's own linter."


def hermes_fact(user: str) -> str:
    return f"[{user}] In Hermes, answers in one paragraph."


def scoped(home: Home) -> None:
    """Each user also has a fact of the project the gateway runs in (its working directory is a checkout) and
    one of the hermes agent."""
    work = home.root / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "remote", "add", "origin", "git@github.com:acme/server.git"], check=True)
    for user in USERS:
        profile = f"key:{user}-channel"
        persona(home, "add", project_fact(user), "--topic", "tools", "--project", str(work), "--profile", profile)
        persona(home, "add", hermes_fact(user), "--topic", "style", "--host", "hermes", "--profile", profile)


def compaction(server: FakeLLM, home: Home, port: int) -> None:
    """Both alice's and bob's facts change; only alice's conversation compacts, and bob's is not refreshed."""
    give(home, LATER)
    first = [*opening("bob", 0), {"role": "assistant", "content": "hello"}]
    ask(port, "bob", [*first, {"role": "user", "content": "[bob] still there?"}])
    bob = chats_of(server, "bob")[-1]
    own_persona_only(bob, "bob", USERS)
    assert LATER["bob"] not in system_of(bob)  # bob's session was not compacted: the same bytes as before
    summaries = len(server.summary_requests())
    long = [*opening("alice", 0), {"role": "assistant", "content": "hello"}]
    for index in range(60):  # many medium turns: past the compressor's threshold, whatever it caps per message
        long += [{"role": "user", "content": f"[alice] turn {index} " + filler(6_000)},
                 {"role": "assistant", "content": "ok"}]
    ask(port, "alice", [*long, {"role": "user", "content": "[alice] after the compaction"}])
    assert len(server.summary_requests()) > summaries, "Hermes did not compact alice's conversation"
    alice = chats_of(server, "alice")[-1]
    # Her compacted request carries her new fact, and still no one else's.
    own_persona_only(alice, "alice", USERS)
    assert LATER["alice"] in system_of(alice), system_of(alice)[-1500:]
    ask(port, "bob", [*first, {"role": "user", "content": "[bob] and now?"}])
    bob = chats_of(server, "bob")[-1]
    own_persona_only(bob, "bob", USERS)
    assert LATER["bob"] not in system_of(bob)


def test_gateway_users_each_get_only_their_own_persona_with_sqlite(tmp_path):
    run_gateway(tmp_path, None)


@pytest.fixture
def postgres_url(tmp_path) -> Iterator[str]:
    found = open_database("postgresql", tmp_path)
    yield str(next(found).target)
    next(found, None)


def test_gateway_users_each_get_only_their_own_persona_with_postgresql(tmp_path, postgres_url):
    run_gateway(tmp_path / "home", postgres_url)
