"""One real-Hermes scenario in one process: `python -m tests.hermes_host.driver SCENARIO ROOT`.

Hermes reads its config at import and keeps plugins, tools and providers in
process globals, so every scenario runs in a process of its own. It records
what the fake model server received at each step, plus Hermes' log problems
and any traffic beyond loopback, in ROOT/result.json; the tests assert on that.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from .fake_llm import FakeLLM
from .harness import VENV_BIN, CLISession, Home, hermes_env, make_home

FACT_1 = "Never force-push; ask first."
FACT_2 = "Uses uv, never pip."
FACT_3 = "Answers tersely."


def respond(body: dict[str, Any], kind: str) -> dict[str, Any]:
    """The fake model: plain replies, except that CALLTOOLS asks for Mnemosyne's and our tools."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if kind != "chat" or last.get("role") == "tool":
        return {}
    if last.get("role") == "user" and "CALLTOOLS" in str(last.get("content")):
        calls = [("mnemosyne_remember", {"content": "The user's cat is called Ada."}),
                 ("persona_list", {}), ("persona_status", {})]
        return {"tool_calls": [{"id": f"call_{i}", "name": name, "arguments": json.dumps(args)}
                               for i, (name, args) in enumerate(calls)]}
    return {}


class Record:
    """What the scenario saw, step by step."""

    def __init__(self, server: FakeLLM, home: Home) -> None:
        self.server, self.home = server, home
        self.data: dict[str, Any] = {"prompts": {}, "rows": {}, "notes": {}}

    def prompt(self, label: str) -> None:
        """The system prompt of the latest chat request."""
        body = self.server.chat_requests()[-1]["body"]
        self.data["prompts"][label] = body["messages"][0]["content"]
        self.data.setdefault("tools", sorted(t["function"]["name"] for t in body.get("tools") or []))

    def rows(self, label: str) -> None:
        db = self.home.home / "mnemosyne" / "data" / "mnemosyne.db"
        with closing(sqlite3.connect(db)) as conn:
            self.data["rows"][label] = [list(row) for row in conn.execute(
                "SELECT * FROM persona_snapshots ORDER BY session_id, target")]

    def note(self, key: str, value: Any) -> None:
        self.data["notes"][key] = value


def persona(home: Home, *args: str) -> str:
    """The persona CLI as the user runs it, with HERMES_HOME set and nothing else."""
    code, output = persona_run(home, *args)
    if code != 0:
        raise RuntimeError(f"persona {' '.join(args)} failed:\n{output}")
    return output


def persona_run(home: Home, *args: str) -> tuple[int, str]:
    """The persona CLI's exit code and output, for a command whose exit code is itself the answer (a forget
    while Hermes holds the session's text in its own store)."""
    done = subprocess.run([str(VENV_BIN / "persona"), *args], env=hermes_env(home), capture_output=True,
                          text=True, timeout=120, cwd=str(home.root))
    return done.returncode, done.stdout + done.stderr


def tool_results(server: FakeLLM) -> dict[str, Any]:
    """The tool answers Hermes sent back to the model, by tool name."""
    for request in reversed(server.chat_requests()):
        messages = request["body"]["messages"]
        calls = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
        answers = {calls.get(m.get("tool_call_id")): m.get("content") for m in messages if m.get("role") == "tool"}
        if answers:
            return answers
    return {}


def grow(session: CLISession, turns: int, tag: str) -> None:
    for index in range(turns):
        session.turn(f"{tag} {index}: tell me something")


def the_same_checks(session: CLISession, record: Record) -> None:
    """The steps both modes must pass, in the order a user would meet them."""
    session.turn("hello")
    record.prompt("first")
    record.rows("first")
    persona(record.home, "add", FACT_2, "--topic", "tools")
    persona(record.home, "render")
    session.turn("a turn after the file changed")
    record.prompt("after_edit")
    session.compress()  # 4 messages: Hermes' compressor makes no progress
    record.rows("after_no_progress")
    session.turn("after a compaction that made no progress")
    record.prompt("after_no_progress")
    grow(session, 3, "before /compress")
    session.compress()
    session.turn("after /compress")
    record.prompt("after_compress")
    grow(session, 4, "before a second /compress")
    session.compress()
    session.turn("after a /compress with an unchanged file")
    record.prompt("after_unchanged_compress")
    persona(record.home, "add", FACT_3, "--topic", "style")
    persona(record.home, "render")
    record.note("auto", session.auto_compact())
    session.turn("after the automatic compaction")
    record.prompt("after_auto")


def beside_mnemosyne(server: FakeLLM, root: Path) -> Record:
    """A Mnemosyne user: mnemosyne-install, then persona as a plugin beside it, HERMES_HOME set, no render."""
    home = make_home(server.base_url, root, mnemosyne=True)
    record = Record(server, home)
    persona(home, "add", FACT_1, "--topic", "git")
    record.note("install", persona(home, "hermes", "install", "--activate"))
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        the_same_checks(session, record)
        session.turn("CALLTOOLS please")
        record.note("tool_results", tool_results(server))
    finally:
        session.close()
    finish(record, session)
    record.note("plugins_list", hermes(home, "plugins", "list", "--plain", "--no-bundled"))
    return record


def as_provider(server: FakeLLM, root: Path) -> Record:
    """No other memory provider: persona as Hermes' memory provider, then /model."""
    home = make_home(server.base_url, root)
    record = Record(server, home)
    persona(home, "add", FACT_1, "--topic", "git")
    record.note("install", persona(home, "hermes", "install", "--activate", "--as-provider"))
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        the_same_checks(session, record)
        persona(home, "add", "Writes commit messages in English.", "--topic", "git")
        persona(home, "render")
        session.switch_model("fake-model-2")  # a rebuild that is not a compaction: a new agent, same session
        session.turn("after /model")
        record.prompt("after_model")
    finally:
        session.close()
    finish(record, session)
    record.note("memory_status", hermes(home, "memory", "status"))
    return record


def hermes(home: Home, *args: str) -> str:
    done = subprocess.run([str(VENV_BIN / "hermes"), *args], env=hermes_env(home), capture_output=True, text=True,
                          timeout=120, cwd=str(home.root), stdin=subprocess.DEVNULL)
    return done.stdout + done.stderr


def finish(record: Record, session: CLISession) -> None:
    record.data["problems"] = [[r.name, r.thread, r.msg] for r in session.logs.problems()]
    record.data["persona_warnings"] = [r.msg for r in session.logs.records
                                       if r.name.startswith("pipeline") and r.level in ("WARNING", "ERROR")]
    record.data["off_box"] = [list(event) for event in session.net.off_box()]
    record.data["summaries"] = len(record.server.summary_requests())


SCENARIOS: dict[str, Callable[[FakeLLM, Path], Record]] = {
    "beside_mnemosyne": beside_mnemosyne,
    "as_provider": as_provider,
}


def main() -> None:
    name, root = sys.argv[1], Path(sys.argv[2])
    server = FakeLLM(responder=respond, models=["fake-model", "fake-model-2"]).start()
    try:
        record = SCENARIOS[name](server, root)
    finally:
        server.stop()
    record.data["interfaces"] = sorted(name for _, name in socket.if_nameindex())  # this network namespace's
    (root / "result.json").write_text(json.dumps(record.data, indent=1, default=str))


if __name__ == "__main__":
    main()
