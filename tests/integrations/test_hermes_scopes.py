"""Scoped facts in Hermes: a session shows the global facts, the `hermes` agent's, and those of the project of its
working directory (Hermes' TERMINAL_CWD, as `agent.runtime_cwd` resolves it); a gateway user gets no project's.
The tools take `scope` (global, project, host); a project scope with no working directory known is refused with a
clear error. Through the general plugin (the llm_request middleware) and the memory provider."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pipeline.integrations.hermes_plugin import PersonaPlugin
from pipeline.integrations.hermes_provider import PersonaMemoryProvider

from .test_hermes_plugin import USER, chat, send, system_of


def repository(path: Path, remote: str) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


@pytest.fixture
def projects(tmp_path: Path) -> dict[str, Path]:
    return {"shop": repository(tmp_path / "shop", "git@github.com:acme/shop.git"),
            "blog": repository(tmp_path / "blog", "https://github.com/acme/blog")}


@pytest.fixture
def plugin(hermes_home: Path) -> PersonaPlugin:
    made = PersonaPlugin()
    yield made
    made.close()


def add(plugin: PersonaPlugin, content: str, **args: str) -> dict:
    return json.loads(plugin._handler("persona_add")({"content": content, "topic": "tools", **args},
                                                    session_id="writer"))


def in_gateway(monkeypatch: pytest.MonkeyPatch, user: str) -> None:
    """Hermes' gateway session context, as the gateway binds it for a chat user."""
    context = types.ModuleType("gateway.session_context")
    context.get_session_env = lambda name, default="": user if name == "HERMES_SESSION_USER_ID" \
        else default  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gateway", types.ModuleType("gateway"))
    monkeypatch.setitem(sys.modules, "gateway.session_context", context)


def test_a_session_shows_its_own_projects_facts_and_the_hermes_ones_and_no_other_projects(
        plugin, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    assert add(plugin, "Answers tersely.")["fact"]["scope"] == "global"
    assert add(plugin, "Uses pnpm, never npm.", scope="project")["fact"]["scope"] == "project:github.com/acme/shop"
    assert add(plugin, "Asks before running a shell command.", scope="host")["fact"]["scope"] == "host:hermes"
    shop = system_of(send(plugin, chat(USER), session_id="in-shop"))
    assert all(text in shop for text in ("Answers tersely.", "Uses pnpm, never npm.",
                                         "Asks before running a shell command."))
    assert shop.count("Uses pnpm, never npm.") == 1

    monkeypatch.setenv("TERMINAL_CWD", str(projects["blog"]))
    blog = system_of(send(plugin, chat(USER), session_id="in-blog"))
    assert "Answers tersely." in blog and "Asks before running a shell command." in blog
    assert "pnpm" not in blog
    (projects["shop"] / "src").mkdir()
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"] / "src"))  # anywhere in the checkout
    assert "Uses pnpm, never npm." in system_of(send(plugin, chat(USER), session_id="in-shop-sub"))


def test_a_gateway_user_gets_no_projects_facts_and_a_project_scope_is_refused(plugin, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    add(plugin, "Answers tersely.")
    add(plugin, "Uses pnpm, never npm.", scope="project")
    in_gateway(monkeypatch, "alice")  # hermes.profile is fixed: the operator chats with their own persona
    sent = system_of(send(plugin, chat(USER), session_id="telegram-chat"))
    assert "Answers tersely." in sent and "pnpm" not in sent  # the server's directory is not the user's project
    refused = add(plugin, "Deploys on Fridays.", scope="project")
    assert refused["status"] == "error" and "scope project needs the session's working directory" in refused["error"]
    assert add(plugin, "Keeps answers short on the phone.", scope="host")["fact"]["scope"] == "host:hermes"


def test_a_replace_keeps_the_scope_unless_it_is_given_another(plugin, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    old = add(plugin, "Uses pnpm, never npm.", scope="project")
    replace = plugin._handler("persona_replace")
    kept = json.loads(replace({"persona_id": old["persona_id"], "content": "Uses bun, never npm."}, session_id="w"))
    assert kept["fact"]["scope"] == "project:github.com/acme/shop"
    moved = json.loads(replace({"persona_id": kept["persona_id"], "content": "Uses bun everywhere.",
                                "scope": "global"}, session_id="w"))
    assert moved["fact"]["scope"] == "global"
    bad = json.loads(replace({"persona_id": moved["persona_id"], "content": "x", "scope": "planet"}, session_id="w"))
    assert bad["status"] == "error" and "scope" in bad["error"]


def test_the_provider_shows_the_sessions_project_and_a_gateway_user_none(hermes_home, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    local = PersonaMemoryProvider()
    local.initialize("local-chat", hermes_home=str(hermes_home), platform="cli")
    answer = json.loads(local.handle_tool_call("persona_add", {"content": "Uses pnpm, never npm.", "topic": "tools",
                                                               "scope": "project"}))
    assert answer["fact"]["scope"] == "project:github.com/acme/shop"
    local.handle_tool_call("persona_add", {"content": "Answers tersely.", "topic": "style"})
    local.on_session_switch("local-chat-2", parent_session_id="local-chat")  # a new conversation, same cwd
    local.initialize("local-chat-2", hermes_home=str(hermes_home), platform="cli")
    assert "Uses pnpm, never npm." in local.system_prompt_block()
    local.shutdown()

    remote = PersonaMemoryProvider()
    remote.initialize("tg-chat", hermes_home=str(hermes_home), platform="telegram", user_id="default")
    block = remote.system_prompt_block()
    assert "Answers tersely." in block and "pnpm" not in block
    refused = json.loads(remote.handle_tool_call("persona_add", {"content": "Deploys on Fridays.", "topic": "ops",
                                                                 "scope": "project"}))
    assert refused["status"] == "error" and "working directory" in refused["error"]
    remote.shutdown()


def test_persona_list_shows_this_sessions_scopes_only(plugin, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    add(plugin, "Answers tersely.")
    add(plugin, "Uses pnpm, never npm.", scope="project")
    add(plugin, "Asks before running a shell command.", scope="host")
    from pipeline import PersonaStore, load_settings

    with PersonaStore.from_settings(load_settings()) as store:
        store.add("In Cursor, never runs the terminal.", topic="safety", scope="host:cursor")
    listed = json.loads(plugin._handler("persona_list")({}, session_id="in-shop"))
    assert {fact["content"] for fact in listed["personas"]} == {
        "Answers tersely.", "Uses pnpm, never npm.", "Asks before running a shell command."}
    monkeypatch.setenv("TERMINAL_CWD", str(projects["blog"]))  # a session in another project
    plugin.close()
    other = PersonaPlugin()
    try:
        listed = json.loads(other._handler("persona_list")({}, session_id="in-blog"))
        assert {fact["content"] for fact in listed["personas"]} == {
            "Answers tersely.", "Asks before running a shell command."}
    finally:
        other.close()


def test_replace_by_text_and_review_reach_only_this_sessions_scopes(plugin, projects, monkeypatch):
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    add(plugin, "Uses npm for JavaScript projects", scope="project")
    proposed = add(plugin, "Now uses pnpm for JavaScript projects", scope="project")
    assert proposed["may_update"]  # proposed within the shop's own scope
    review = plugin._handler("persona_review")
    assert json.loads(review({}, session_id="in-shop"))["count"] == 1
    plugin.close()
    monkeypatch.setenv("TERMINAL_CWD", str(projects["blog"]))
    other = PersonaPlugin()
    try:
        assert json.loads(other._handler("persona_review")({}, session_id="in-blog"))["count"] == 0
        refused = json.loads(other._handler("persona_replace")({"old_text": "pnpm", "content": "Uses bun."},
                                                               session_id="in-blog"))
        assert refused["status"] == "error" and "0 persona facts of this session's scopes" in refused["error"]
    finally:
        other.close()
    monkeypatch.setenv("TERMINAL_CWD", str(projects["shop"]))
    again = PersonaPlugin()
    try:
        done = json.loads(again._handler("persona_replace")({"old_text": "pnpm", "content": "Uses bun for "
                                                             "JavaScript projects"}, session_id="in-shop"))
        assert done["status"] == "ok" and done["fact"]["scope"] == "project:github.com/acme/shop"
    finally:
        again.close()
