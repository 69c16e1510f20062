"""Every frame `persona mcp` reads gets an answer; a malformed one a JSON-RPC error (issue 19, paragraph 10).

The server runs as a real process, as an MCP client starts it (`python -m pipeline mcp`). Raw lines go
to its stdin; its stdout is read with a timeout, so a frame left unanswered fails the test instead of
hanging it. After each bad frame a ping must be answered next: exactly one reply per bad frame, and
the server still works.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import PersonaStore

from ..conftest import REPO

REPLY_TIMEOUT_S = 30  # generous: a start on a loaded machine; a missing reply fails at this bound
INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}

BAD_FRAMES = {  # frame -> (code, id of the reply)
    "garbage": (b"garbage", -32700, None),
    "an empty array": (b"[]", -32600, None),
    "an array": (b"[1,2]", -32600, None),
    "a batch of requests": (b'[{"jsonrpc":"2.0","id":3,"method":"ping"}]', -32600, None),
    "a lone surrogate escape": (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\\ud800"}}', -32700, None),
    "invalid UTF-8": (b'{"jsonrpc":"2.0","id":5,"method":"\xff\xfe"}', -32700, None),
    "no jsonrpc member": (b'{"id":6,"method":"ping"}', -32600, 6),
    "a method that is not a string": (b'{"jsonrpc":"2.0","id":"m","method":5}', -32600, "m"),
    "a fractional id": (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', -32600, None),
    "a null id": (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, None),
    "NaN": (b'{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":NaN}}', -32700, None),
    "a number": (b"42", -32600, None),
    "100,000 nested arrays": (b"[" * 100_000, -32700, None),
    "100,000 nested objects in a request": (b'{"jsonrpc":"2.0","id":10,"method":"ping","params":'
                                            + b'{"a":' * 100_000, -32700, None),
    "an oversized line": (b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"' + b"x" * (3 << 20) + b'"}}',
                          -32600, None),
}


class Server:
    """`persona mcp` as a client runs it, spoken to in raw lines."""

    def __init__(self, workdir: Path) -> None:
        env = {"PATH": os.environ["PATH"], "HOME": str(workdir), "PYTHONPATH": str(REPO),
               "MNEMOSYNE_PERSONA_STORE__PATH": str(workdir / "m.db"),
               "MNEMOSYNE_PERSONA_FILE": str(workdir / "persona-{profile}.md")}
        self.process = subprocess.Popen([sys.executable, "-m", "pipeline", "mcp"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=workdir)
        self.replies: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(line)

    def send(self, frame: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict:
        try:
            line = self.replies.get(timeout=REPLY_TIMEOUT_S)
        except queue.Empty:
            pytest.fail(f"no reply within {REPLY_TIMEOUT_S} s")
        return json.loads(line)

    def call(self, request_id: int, method: str, params: dict | None = None) -> dict:
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                              **({"params": params} if params is not None else {})}).encode())
        return self.reply()

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=REPLY_TIMEOUT_S)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    for profile, fact in (("default", "Alice answers tersely."), ("bob", "Bob likes long answers.")):
        with PersonaStore(tmp_path / "m.db", profile=profile) as store:
            store.add(fact, topic="style")
    running = Server(tmp_path)
    try:
        running.send(json.dumps(INITIALIZE).encode())
        assert "result" in running.reply()
        running.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield running
    finally:
        running.process.kill()
        running.process.wait()


def assert_error(reply: dict, code: int, request_id: object) -> None:
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id, reply
    assert reply["error"]["code"] == code and reply["error"]["message"], reply


@pytest.mark.parametrize("kind", sorted(BAD_FRAMES))
def test_a_malformed_frame_gets_one_error_reply_and_the_server_goes_on(server, kind):
    frame, code, request_id = BAD_FRAMES[kind]
    server.send(frame)
    assert_error(server.reply(), code, request_id)
    assert server.call(100, "ping") == {"jsonrpc": "2.0", "id": 100, "result": {}}  # next: nothing else came


def test_after_every_kind_of_bad_frame_a_tool_call_still_answers_for_its_own_profile(server):
    for frame, code, request_id in BAD_FRAMES.values():
        server.send(frame)
        assert_error(server.reply(), code, request_id)
    server.send(b"   ")  # a blank line is no frame: skipped, unanswered
    listed = server.call(200, "tools/call", {"name": "persona_list", "arguments": {"profile": "bob"}})
    text = json.dumps(listed)
    assert "Bob likes long answers." in text and "Alice" not in text
    assert server.call(201, "ping")["id"] == 201
    assert server.close() == 0


def test_the_sdk_still_answers_what_it_understands(server):
    unknown = server.call(300, "no/such/method")
    assert unknown["id"] == 300 and unknown["error"]["code"] == -32601
    bad_params = server.call(301, "tools/call", {})
    assert bad_params["id"] == 301 and bad_params["error"]["code"] == -32602
    server.send(b'{"jsonrpc":"2.0","method":"notifications/no-such"}')  # a notification is never answered
    server.send(b'{"jsonrpc":"2.0","id":999,"result":{}}')  # nor is a response
    assert server.call(302, "ping")["id"] == 302
