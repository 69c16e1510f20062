"""A fact's whole life in the real Hermes Agent: `python -m tests.hermes_host.fact_life SCENARIO ROOT`.

The fake model calls our tools when a user turn says ``TOOL name {json}``, and a delegate_task child calls
persona_add when its goal says ``CHILD-ADD``. Every step is recorded from the requests the fake model
received (the system prompt each one carried, and the tool answers Hermes sent back), in ROOT/result.json.
"""

from __future__ import annotations

import itertools
import json
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .driver import Record, finish, grow, persona
from .fake_llm import FakeLLM
from .harness import CLISession, Home, make_home

KEPT = "Never force-push; ask first."
MOVED = "Uses npm for JavaScript packages."
NOW = "Uses pnpm for JavaScript packages now."
SECRET = "The user's therapist is Dr. Ortiz."
ADDED = "Writes commit messages in English."
CHILD = "A subagent wrote this fact."
PROMOTED = "Prefers green tea in the afternoon."  # a memory Mnemosyne's own tool promotes
HERE = "Runs the shop's tests with vitest."  # a fact of the project `hermes chat` runs in
ELSEWHERE = "Deploys the blog with hugo."  # a fact of another project: never in this session
HERMES_ONLY = "In Hermes, answers in one paragraph."  # a fact of the hermes agent
LEARNED = "Prefers answers with one worked example."  # what Hermes' own memory tool saves about the user
CALLS = itertools.count(1)  # tool call ids unique across the whole scenario, compactions included


def respond(body: dict[str, Any], kind: str) -> dict[str, Any]:
    """Plain replies, except a user turn ``TOOL name {json}`` (one call) or a child's ``CHILD-ADD`` goal."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if kind != "chat" or last.get("role") != "user":
        return {}
    text = str(last.get("content"))
    if text.startswith("TOOL "):  # the first line only: Hermes may append recalled memories to the turn
        name, _, args = text[5:].split("\n", 1)[0].partition(" ")
        return {"tool_calls": [{"id": f"call_{next(CALLS)}", "name": name, "arguments": args or "{}"}]}
    if "CHILD-ADD" in text:  # the delegate_task child's first turn carries the parent's goal
        return {"tool_calls": [{"id": "call_child", "name": "persona_add",
                                "arguments": json.dumps({"content": CHILD, "topic": "misc"})}]}
    return {}


def fact_id(home: Home, content: str) -> int:
    facts = json.loads(persona(home, "list", "--json"))
    return next(int(fact["id"]) for fact in facts if fact["content"] == content)


def answered(requests: list[dict[str, Any]], name: str) -> tuple[str, str] | None:
    """(the system prompt, the tool answer) of the first request that carried the answer to a ``name`` call:
    the very next request after the tool ran."""
    for request in requests:
        messages = request["body"]["messages"]
        ids = {c["id"] for m in messages for c in m.get("tool_calls") or [] if c["function"]["name"] == name}
        for message in messages:
            if message.get("role") == "tool" and message.get("tool_call_id") in ids:
                return str(messages[0]["content"]), str(message.get("content"))
    return None


def child_answer(record: Record, before: int, wait_s: float = 60) -> tuple[str, str] | None:
    """The answer the delegate_task child got from persona_add; Hermes runs the child in the background."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        found = answered(record.server.chat_requests()[before:], "persona_add")
        if found is not None:
            return found
        time.sleep(0.2)
    return None


def child_tools(requests: list[dict[str, Any]]) -> list[str] | None:
    """The tools the delegate_task child's first request offered its model (None if no child request came)."""
    for request in requests:
        messages = request["body"].get("messages") or []
        first_user = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        if "CHILD-ADD" in first_user and not first_user.startswith("TOOL "):
            return [tool["function"]["name"] for tool in request["body"].get("tools") or []]
    return None


def tool_turn(session: CLISession, record: Record, label: str, name: str, args: dict[str, Any]) -> None:
    before = len(record.server.chat_requests())
    session.turn(f"TOOL {name} {json.dumps(args)}")
    found = answered(record.server.chat_requests()[before:], name)
    record.note(label, list(found) if found else None)


def compact(session: CLISession, record: Record, label: str) -> None:
    grow(session, 3, f"before {label}")
    session.compress()
    session.turn(f"after {label}")
    record.prompt(label)


def new_session(session: CLISession, record: Record, label: str) -> None:
    session.on_process_loop(lambda: session.cli.new_session(silent=True))  # what /new runs, on its thread
    session.turn(f"first turn of {label}")
    record.prompt(label)


def life(session: CLISession, record: Record) -> None:
    """Add, correct, forget, delegate: the steps both modes go through, in a user's order."""
    home = record.home
    session.turn("hello")
    record.prompt("first")
    tool_turn(session, record, "add", "persona_add", {"content": ADDED, "topic": "git"})
    record.prompt("after_add")
    compact(session, record, "after_add_compress")
    tool_turn(session, record, "replace", "persona_replace", {"old_text": "npm for", "content": NOW})
    compact(session, record, "after_replace_compress")
    tool_turn(session, record, "forget", "persona_forget", {"persona_id": fact_id(home, SECRET)})
    compact(session, record, "after_forget_compress")
    before = len(record.server.chat_requests())
    session.turn('TOOL delegate_task {"goal": "CHILD-ADD: note the user\'s habit", "context": "none"}')
    record.note("child_add", child_answer(record, before))
    record.note("child_tools", child_tools(record.server.chat_requests()[before:]))
    new_session(session, record, "new_session")
    facts = json.loads(persona(home, "list", "--json"))
    record.note("facts", [fact["content"] for fact in facts])
    record.note("writers", {fact["content"]: fact["writer"] for fact in facts})


def seeded(server: FakeLLM, root: Path, *, install: tuple[str, ...], mnemosyne: bool,
           mnemosyne_persona: bool = False) -> tuple[Home, Record]:
    home = make_home(server.base_url, root, mnemosyne=mnemosyne)
    record = Record(server, home)
    for content, topic in ((KEPT, "git"), (MOVED, "tools"), (SECRET, "health")):
        persona(home, "add", content, "--topic", topic)
    persona(home, "add", "Bob plays the cello.", "--topic", "music", "--profile", "bob")  # the other user
    if mnemosyne_persona:  # a user of the existing tier: Mnemosyne injects the file itself
        file = home.home / "memory" / "persona.md"
        (home.home / ".env").write_text(f"MNEMOSYNE_PERSONA_ENABLED=true\nMNEMOSYNE_PERSONA_FILE={file}\n")
        persona(home, "render")
    record.note("install", persona(home, "hermes", "install", "--activate", *install))
    return home, record


def run_life(home: Home, record: Record, root: Path) -> Record:
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        life(session, record)
    finally:
        session.close()
    finish(record, session)
    return record


def beside_mnemosyne(server: FakeLLM, root: Path) -> Record:
    return run_life(*seeded(server, root, install=(), mnemosyne=True), root)


def as_provider(server: FakeLLM, root: Path) -> Record:
    return run_life(*seeded(server, root, install=("--as-provider",), mnemosyne=False), root)


def mnemosyne_persona(server: FakeLLM, root: Path) -> Record:
    return run_life(*seeded(server, root, install=(), mnemosyne=True, mnemosyne_persona=True), root)


def mnemosyne_tools(server: FakeLLM, root: Path) -> Record:
    """Mnemosyne's own mnemosyne_persona_promote / _demote, called by the model beside our plugin, write
    memoria_persona directly: their facts reach the prompt at the next compaction and in a new session."""
    home, record = seeded(server, root, install=(), mnemosyne=True)
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        session.turn("hello")
        record.prompt("first")
        database = home.home / "mnemosyne" / "data" / "mnemosyne.db"
        with sqlite3.connect(database) as conn:  # a memory Mnemosyne keeps, as its own tools expect one
            conn.execute("INSERT INTO working_memory (id, content, session_id) VALUES ('wm-tea', ?, 'default')",
                         (PROMOTED,))
        tool_turn(session, record, "promote", "mnemosyne_persona_promote", {"memory_id": "wm-tea"})
        compact(session, record, "after_promote_compress")
        new_session(session, record, "after_promote_new_session")
        tool_turn(session, record, "demote", "mnemosyne_persona_demote", {"persona_id": fact_id(home, KEPT)})
        compact(session, record, "after_demote_compress")
        new_session(session, record, "after_demote_new_session")
        record.note("facts", [fact["content"] for fact in json.loads(persona(home, "list", "--json"))])
    finally:
        session.close()
    finish(record, session)
    return record


def learns_memory(server: FakeLLM, root: Path) -> Record:
    """Hermes' own `memory` tool saves an entry about the user in USER.md: persona-tier learns it where Hermes
    renders what is due (a new session, a compaction), writes it into Codex's file once, and leaves it out of
    Hermes' own persona block (Hermes carries USER.md itself)."""
    home, record = seeded(server, root, install=(), mnemosyne=True)
    persona(home, "targets", "add", "codex", "--user")
    persona(home, "render")
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        session.turn("hello")
        record.prompt("first")
        tool_turn(session, record, "remember", "memory", {"action": "add", "target": "user", "content": LEARNED})
        new_session(session, record, "after_memory_new_session")
        compact(session, record, "after_memory_compress")
        facts = json.loads(persona(home, "list", "--json"))
        record.note("writers", {fact["content"]: fact["writer"] for fact in facts})
        record.note("codex", (home.root / ".codex" / "AGENTS.md").read_text(encoding="utf-8"))
        record.note("user_md", (home.home / "memories" / "USER.md").read_text(encoding="utf-8"))
    finally:
        session.close()
    finish(record, session)
    return record


def repository(path: Path, remote: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def scopes(server: FakeLLM, root: Path) -> Record:
    """`hermes chat` started in a project's checkout (its cwd is ROOT/work): the prompt carries the global
    facts, the hermes agent's and that project's, never another project's; a tool call with scope project
    writes that project's fact."""
    home, record = seeded(server, root, install=(), mnemosyne=True)
    work = repository(home.root / "work", "git@github.com:acme/shop.git")
    blog = repository(root / "blog", "https://github.com/acme/blog")
    persona(home, "add", HERE, "--topic", "testing", "--project", str(work))
    persona(home, "add", ELSEWHERE, "--topic", "deploy", "--project", str(blog))
    persona(home, "add", HERMES_ONLY, "--topic", "style", "--host", "hermes")
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        session.turn("hello")
        record.prompt("first")
        tool_turn(session, record, "add", "persona_add", {"content": ADDED, "topic": "git", "scope": "project"})
        compact(session, record, "after_add_compress")
        record.note("scopes", {fact["content"]: fact["scope"] for fact in json.loads(persona(home, "list", "--json"))})
    finally:
        session.close()
    finish(record, session)
    return record


SCENARIOS: dict[str, Callable[[FakeLLM, Path], Record]] = {
    "scopes": scopes,
    "life_beside_mnemosyne": beside_mnemosyne,
    "life_as_provider": as_provider,
    "life_mnemosyne_persona": mnemosyne_persona,
    "mnemosyne_tools": mnemosyne_tools,
    "learns_memory": learns_memory,
}


def main() -> None:
    name, root = sys.argv[1], Path(sys.argv[2])
    server = FakeLLM(responder=respond, models=["fake-model"]).start()
    try:
        record = SCENARIOS[name](server, root)
    finally:
        server.stop()
    record.data["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    (root / "result.json").write_text(json.dumps(record.data, indent=1, default=str))


if __name__ == "__main__":
    main()
