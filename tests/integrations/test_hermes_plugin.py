"""The general Hermes plugin: the persona through the `llm_request` middleware, beside any memory provider.

Requests here have the shapes hermes-agent 0.19 sends (recorded by `make test-hermes`): chat completions
with the system prompt in messages[0], Anthropic with `system`, Responses with `instructions`; after a
compaction the summary is a message that starts with, or contains, Hermes' summary prefix.
"""

from __future__ import annotations

import copy
import json
import logging
import sqlite3
import sys
import threading
import types
from contextlib import closing
from pathlib import Path

import pytest

from pipeline.integrations.hermes_plugin import PersonaPlugin, compaction_marker, snapshot_id, with_system_text
from pipeline.integrations.hermes_request import MERGED_DELIMITER, MERGED_HEADER, SUMMARY_END

from ..conftest import write
from ..support.hermes_threads import on_new_thread

V1 = "## style\n\n- Answers tersely.\n"
V2 = "## style\n\n- Answers in full sentences.\n"
APPENDIX_V1 = "\n\n# L3 Persona (Active Behavioral Rules)\n" + V1
APPENDIX_V2 = "\n\n# L3 Persona (Active Behavioral Rules)\n" + V2
SUMMARY = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. ..."


def chat(*turns: dict, system: str = "You are Hermes.") -> dict:
    return {"model": "m", "max_tokens": 100, "tools": [],
            "messages": [{"role": "system", "content": system}, *turns]}


USER = {"role": "user", "content": "hi"}


def summary_message(n: int, *, merged: bool = False) -> dict:
    """A summary as hermes-agent 0.19's compressor inserts it: prefix, body, end marker."""
    body = f"{SUMMARY}\n## Active Task\nround {n}\n\n{SUMMARY_END}"
    if merged:  # Hermes merges the summary into the first tail message when roles would collide
        body = f"{MERGED_HEADER}\nold\n\n{MERGED_DELIMITER}\n\n{body}"
    return {"role": "assistant", "content": body}


@pytest.fixture
def home(hermes_home) -> Path:
    write(hermes_home / "memory" / "persona.md", V1)
    return hermes_home


def send(plugin: PersonaPlugin, request: dict, session_id: str = "s1", **context) -> dict:
    """What Hermes does per API call, on the turn's thread: a deep copy through the middleware."""
    sent = copy.deepcopy(request)
    result = on_new_thread(lambda: plugin.on_llm_request(request=sent, session_id=session_id,
                                                         api_mode="chat_completions", **context))
    assert sent == request  # the middleware never edits Hermes' copy in place
    return result["request"] if result else request


def system_of(request: dict) -> str:
    return request["messages"][0]["content"]


def snapshot_rows(home: Path) -> list[tuple]:
    with closing(sqlite3.connect(home / "mnemosyne" / "data" / "mnemosyne.db")) as conn:
        return conn.execute("SELECT * FROM persona_snapshots ORDER BY session_id").fetchall()


def test_the_persona_is_appended_to_the_system_prompt(plugin):
    sent = send(plugin, chat(USER))
    assert system_of(sent) == "You are Hermes." + APPENDIX_V1
    assert sent["messages"][1:] == [USER] and sent["tools"] == []


def test_a_mid_session_edit_changes_nothing_until_a_compaction(plugin, home):
    first = send(plugin, chat(USER))
    write(home / "memory" / "persona.md", V2)
    assert send(plugin, chat(USER, {"role": "assistant", "content": "ok"}, USER)) ["messages"][0] == \
        first["messages"][0]
    compacted = send(plugin, chat(summary_message(1), USER))
    assert system_of(compacted) == "You are Hermes." + APPENDIX_V2
    assert system_of(send(plugin, chat(summary_message(1), USER, USER))) == "You are Hermes." + APPENDIX_V2


def test_a_summary_merged_into_a_tail_message_is_a_compaction_too(plugin, home):
    send(plugin, chat(USER))
    write(home / "memory" / "persona.md", V2)
    assert system_of(send(plugin, chat(summary_message(1, merged=True), USER))).endswith(APPENDIX_V2)


def test_a_compaction_with_an_unchanged_file_keeps_the_bytes_and_the_text_row(plugin, home):
    first = send(plugin, chat(USER))
    text_columns = [row[:7] for row in snapshot_rows(home)]
    again = send(plugin, chat(summary_message(1), USER))
    assert system_of(again) == system_of(first)
    assert [row[:7] for row in snapshot_rows(home)] == text_columns  # text, hash, generation, recorded_at


def test_requests_without_a_new_summary_never_refresh(plugin, home):
    send(plugin, chat(summary_message(1), USER))
    rows = snapshot_rows(home)
    write(home / "memory" / "persona.md", V2)
    for _ in range(3):  # a no-progress compaction leaves the summary as it was
        assert system_of(send(plugin, chat(summary_message(1), USER))).endswith(APPENDIX_V1)
    assert snapshot_rows(home) == rows


def test_a_restarted_hermes_does_not_refresh_again_for_the_same_summary(plugin, home):
    send(plugin, chat(summary_message(1), USER))
    write(home / "memory" / "persona.md", V2)
    restarted = PersonaPlugin()  # a new process: nothing in memory
    assert system_of(send(restarted, chat(summary_message(1), USER))).endswith(APPENDIX_V1)
    assert system_of(send(restarted, chat(summary_message(2), USER))).endswith(APPENDIX_V2)
    restarted.close()


def test_a_rotated_session_id_after_compaction_gets_the_current_file(plugin, home):
    send(plugin, chat(USER), session_id="old")
    write(home / "memory" / "persona.md", V2)
    assert system_of(send(plugin, chat(summary_message(1), USER), session_id="new")).endswith(APPENDIX_V2)
    assert system_of(send(plugin, chat(USER), session_id="old")).endswith(APPENDIX_V1)


def test_anthropic_and_responses_shapes():
    anthropic = {"model": "c", "system": [{"type": "text", "text": "Be kind.", "cache_control": {"type": "x"}}],
                 "messages": [USER]}
    changed = with_system_text(anthropic, "\n\nP")
    assert changed["system"] == [{"type": "text", "text": "Be kind.\n\nP", "cache_control": {"type": "x"}}]
    assert with_system_text({"system": "Be kind.", "messages": []}, "\n\nP")["system"] == "Be kind.\n\nP"
    responses = {"model": "g", "instructions": "Be kind.", "input": [USER]}
    assert with_system_text(responses, "\n\nP")["instructions"] == "Be kind.\n\nP"
    bare = with_system_text({"messages": [USER]}, "\n\nP")
    assert bare["messages"] == [{"role": "system", "content": "P"}, USER]
    parts = with_system_text(chat(system=[{"type": "text", "text": "A"}]), "\n\nP")  # type: ignore[arg-type]
    assert parts["messages"][0]["content"] == [{"type": "text", "text": "A\n\nP"}]


def test_the_summary_is_found_in_every_shape():
    assert compaction_marker(chat(USER)) is None
    assert compaction_marker(chat(summary_message(1))) == compaction_marker(chat(summary_message(1), USER))
    assert compaction_marker(chat(summary_message(1))) != compaction_marker(chat(summary_message(2)))
    parts = {"role": "user", "content": [{"type": "text", "text": f"{SUMMARY} x\n\n{SUMMARY_END}"}]}
    assert compaction_marker({"input": [parts]}) is not None
    assert compaction_marker(chat(system=SUMMARY)) is None  # the system prompt is never the summary


def test_a_missing_file_is_rendered_before_the_first_snapshot(plugin, home):
    (home / "memory" / "persona.md").unlink()
    tools = plugin._profile().tools
    assert json.loads(tools.call("persona_add", {"content": "Uses uv.", "topic": "tools"}, session_id="s1"))[
        "status"] == "ok"
    assert "- Uses uv." in system_of(send(plugin, chat(USER)))


def test_an_empty_store_and_no_file_adds_nothing_and_pins_nothing(plugin, home):
    (home / "memory" / "persona.md").unlink()
    assert send(plugin, chat(USER)) == chat(USER)
    write(home / "memory" / "persona.md", V1)
    assert system_of(send(plugin, chat(USER))).endswith(APPENDIX_V1)


def test_each_hermes_home_gets_its_own_persona(plugin, home, tmp_path, monkeypatch):
    other = tmp_path / "other-profile"
    write(other / "memory" / "persona.md", V2)
    assert system_of(send(plugin, chat(USER))).endswith(APPENDIX_V1)
    monkeypatch.setenv("HERMES_HOME", str(other))  # Hermes resolves its home per request
    assert system_of(send(plugin, chat(USER))).endswith(APPENDIX_V2)


def test_gateway_users_get_their_own_profiles(plugin, home, monkeypatch):
    write(home / "mnemosyne" / "persona.yaml", "hermes:\n  profile: user_id\n")
    current = {"user": "alice"}
    gateway = types.ModuleType("gateway")
    context = types.ModuleType("gateway.session_context")
    context.get_session_env = lambda name, default="": current["user"] if name == "HERMES_SESSION_USER_ID" \
        else default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gateway", gateway)
    monkeypatch.setitem(sys.modules, "gateway.session_context", context)
    for user in ("alice", "bob"):
        current["user"] = user
        handler = plugin._handler("persona_add")
        assert json.loads(handler({"content": f"{user} fact", "topic": "t"}, session_id=f"{user}-s"))["status"] == "ok"
    current["user"] = "alice"
    sent = system_of(send(plugin, chat(USER), session_id="alice-s"))
    assert "alice fact" in sent and "bob fact" not in sent


def test_tools_answer_in_the_contracts_shape_and_never_raise(plugin, home):
    add = plugin._handler("persona_add")
    added = json.loads(add({"content": "Uses uv.", "topic": "tools"}, session_id="s1", task_id="t"))
    assert added["status"] == "ok" and added["created"] and isinstance(added["persona_id"], int)
    listed = json.loads(plugin._handler("persona_list")({}, session_id="s1"))
    assert listed["count"] == 1 and listed["personas"][0]["content"] == "Uses uv."
    assert json.loads(plugin._handler("persona_list")("{bad", session_id="s1"))["status"] == "error"
    assert "extra inputs" in json.loads(plugin._handler("persona_list")({"session": "other"}))["error"]
    refreshed = json.loads(plugin._handler("persona_session_refresh")({}, session_id="s1"))
    assert refreshed["status"] == "ok" and refreshed["session_id"] == snapshot_id(str(home), "s1")


def test_a_broken_config_never_reaches_hermes(plugin, home, caplog):
    write(home / "mnemosyne" / "persona.yaml", "cap:\n  token_cap: lots\n")
    with caplog.at_level(logging.WARNING):
        assert plugin.on_llm_request(request=chat(USER), session_id="s1") is None
        answer = json.loads(plugin._handler("persona_list")({}, session_id="s1"))
    assert answer["status"] == "error" and "could not load its settings" in answer["error"]
    assert "token_cap" in caplog.text
    assert plugin.on_llm_request(request="not a dict", session_id="s1") is None


def test_many_threads_agree(plugin):
    results, errors = [], []

    def hammer() -> None:
        try:
            for _ in range(25):
                results.append(system_of(send(plugin, chat(USER), session_id="shared")))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=hammer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and set(results) == {"You are Hermes." + APPENDIX_V1}


# -- failures inside a running session (found by driving the real agent) ---------------------------------


def lock(db: Path) -> sqlite3.Connection:
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    return locker


def test_a_locked_store_at_a_compaction_keeps_the_persona_with_one_warning(plugin, home, caplog):
    send(plugin, chat(USER))
    write(home / "memory" / "persona.md", V2)
    locker = lock(home / "mnemosyne" / "data" / "mnemosyne.db")
    with caplog.at_level(logging.WARNING):
        systems = [system_of(send(plugin, chat(summary_message(1), USER))) for _ in range(4)]
    locker.execute("ROLLBACK")
    locker.close()
    assert set(systems) == {"You are Hermes." + APPENDIX_V2}  # the compaction is real: its persona is served
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def test_a_corrupt_store_still_gives_new_sessions_the_file(plugin, home, caplog):
    send(plugin, chat(USER), session_id="old")
    db = home / "mnemosyne" / "data" / "mnemosyne.db"
    plugin.close()
    db.write_bytes(b"garbage" * 1000)
    with caplog.at_level(logging.WARNING):
        assert system_of(send(plugin, chat(USER), session_id="new")).endswith(APPENDIX_V1)
        write(home / "memory" / "persona.md", V2)
        assert system_of(send(plugin, chat(USER, USER), session_id="new")).endswith(APPENDIX_V1)  # pinned
    assert "not a SQLite database" in caplog.text


def test_a_first_snapshot_the_store_could_not_take_is_pinned_and_recorded_later(plugin, home):
    db = home / "mnemosyne" / "data" / "mnemosyne.db"
    send(plugin, chat(USER), session_id="warm-up")
    locker = lock(db)
    assert system_of(send(plugin, chat(USER), session_id="s")).endswith(APPENDIX_V1)
    write(home / "memory" / "persona.md", V2)  # a hand edit mid-session
    assert system_of(send(plugin, chat(USER, USER), session_id="s")).endswith(APPENDIX_V1)
    locker.execute("ROLLBACK")
    locker.close()
    assert system_of(send(plugin, chat(USER, USER, USER), session_id="s")).endswith(APPENDIX_V1)
    assert [row[3] for row in snapshot_rows(home) if row[1] == snapshot_id(str(home), "s")] == [V1]


def test_summary_like_text_pasted_later_is_not_a_compaction(plugin, home):
    send(plugin, chat(USER))
    write(home / "memory" / "persona.md", V2)
    pasted = {"role": "user", "content": "[CONTEXT SUMMARY]: look what I found"}
    later = chat(*[USER, {"role": "assistant", "content": "ok"}] * 4, pasted)
    assert system_of(send(plugin, later)).endswith(APPENDIX_V1)


def test_a_branch_keeps_its_parents_persona(plugin, home):
    history = [USER, {"role": "assistant", "content": "first answer"}, {"role": "user", "content": "more"}]
    send(plugin, chat(*history), session_id="parent")
    write(home / "memory" / "persona.md", V2)
    branch = chat(*history, {"role": "assistant", "content": "x"}, {"role": "user", "content": "branch here"})
    assert system_of(send(plugin, branch, session_id="branch")).endswith(APPENDIX_V1)
    assert system_of(send(plugin, chat(USER), session_id="unrelated")).endswith(APPENDIX_V2)


def test_a_symlink_loop_at_the_persona_file_never_reaches_hermes(plugin, home):
    send(plugin, chat(USER))
    persona = home / "memory" / "persona.md"
    persona.unlink()
    persona.symlink_to(persona)
    assert system_of(send(plugin, chat(summary_message(1), USER))).endswith(APPENDIX_V1)  # kept
    assert send(plugin, chat(USER), session_id="new") == chat(USER)  # nothing to serve, nothing raised


def test_many_gateway_users_hold_a_bounded_number_of_open_files(plugin, home, monkeypatch):
    from pipeline.integrations import hermes_state

    write(home / "mnemosyne" / "persona.yaml", "hermes:\n  profile: user_id\n")
    fds = Path("/proc/self/fd")
    before = len(list(fds.iterdir()))
    for index in range(3 * hermes_state.MAX_PROFILES):
        # Outside Hermes' gateway the user comes from the environment, as Hermes' own lookup falls back to.
        monkeypatch.setenv("HERMES_SESSION_USER_ID", f"user{index}")
        send(plugin, chat(USER), session_id=f"s{index}")
    assert len(list(fds.iterdir())) - before <= 3 * hermes_state.MAX_PROFILES  # not 3 per user, for ever
    assert len(plugin.state.profiles) == hermes_state.MAX_PROFILES


def test_a_refresh_that_succeeds_has_no_error_key(plugin):
    answer = json.loads(plugin._handler("persona_session_refresh")({}, session_id="s1"))
    assert answer["status"] == "ok" and "error" not in answer
    assert "whole number" in json.loads(plugin._handler("persona_reinforce")({"persona_id": True}))["error"]


# -- what a subagent or the background review is offered -----------------------------------------------------------

SHAPES = {  # the tools list of each API mode, as Hermes builds its request
    "chat_completions": lambda names: {"tools": [{"type": "function", "function": {"name": n}} for n in names]},
    "anthropic_messages": lambda names: {"system": "You are Hermes.", "tools": [{"name": n} for n in names]},
    "codex_responses": lambda names: {"instructions": "You are Hermes.", "input": [],
                                      "tools": [{"type": "function", "name": n} for n in names]},
    "bedrock_converse": lambda names: {"system": [{"text": "You are Hermes."}],
                                       "toolConfig": {"tools": [{"toolSpec": {"name": n}} for n in names]}},
}
OFFERED = ["terminal", "persona_list", "persona_add", "persona_forget", "persona_status", "persona_replace"]


def offered(request: dict) -> list[str]:
    tools = request.get("tools") or request.get("toolConfig", {}).get("tools", [])
    return [(t.get("function") or t.get("toolSpec") or t)["name"] for t in tools]


@pytest.mark.parametrize("api_mode", sorted(SHAPES))
def test_a_subagent_is_offered_no_write_tool_in_any_api_mode(plugin, api_mode):
    request = {"model": "m", "messages": [{"role": "user", "content": "task"}], **SHAPES[api_mode](OFFERED)}
    if api_mode == "codex_responses":
        request.pop("messages")
    child = on_new_thread(lambda: plugin.on_llm_request(request=copy.deepcopy(request), session_id="child",
                                                        api_mode=api_mode, platform="subagent"))
    assert offered(child["request"]) == ["terminal", "persona_list", "persona_status"]
    parent = on_new_thread(lambda: plugin.on_llm_request(request=copy.deepcopy(request), session_id="s1",
                                                         api_mode=api_mode, platform="cli"))
    assert offered(parent["request"]) == OFFERED  # the primary agent keeps every tool


def test_the_background_review_is_offered_no_write_tool(plugin, monkeypatch):
    """Hermes' review fork shares the parent's session; its turns run with the write origin background_review."""
    import contextvars
    import sys
    import types

    origin = contextvars.ContextVar("origin", default="foreground")
    provenance = types.ModuleType("tools.skill_provenance")
    provenance.get_current_write_origin = origin.get  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tools", types.ModuleType("tools"))
    monkeypatch.setitem(sys.modules, "tools.skill_provenance", provenance)
    request = {**chat(USER), **SHAPES["chat_completions"](OFFERED)}

    def review() -> dict:  # on the review fork's own thread, where Hermes set the origin for its turn
        origin.set("background_review")
        return plugin.on_llm_request(request=copy.deepcopy(request), session_id="s1", api_mode="chat_completions")

    reviewed = on_new_thread(lambda: contextvars.copy_context().run(review))
    assert offered(reviewed["request"]) == ["terminal", "persona_list", "persona_status"]
    assert offered(send(plugin, request)) == OFFERED
