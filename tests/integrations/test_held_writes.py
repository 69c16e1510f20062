"""`writes.agents: ask` (issue 53, point 3): every add, promote, replace and demote through the agent tools is held
as a proposal the user accepts or dismisses in `persona review` (or the page), and the tool answers that the fact
awaits the user's approval; nothing reaches the persona or a rendered file before. Through the Python tools, the
CLI, the Hermes plugin's handlers and the real MCP SDK client; both backends, two profiles, two projects."""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from pipeline import ForgottenError, PersonaStore, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json
from pipeline.schedule.forget import forget

from ..conftest import write
from .test_mcp import server, workdir  # noqa: F401 (the fixture)

SHOP, BLOG = "github.com/acme/shop", "github.com/acme/blog"


def settings_of(database, tmp_path: Path, mode: str = "ask"):
    return load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p-{profile}.md"),
                                    "injection.enabled": True, "writes.agents": mode})


def tools_of(settings, project: str | None):
    return PersonaTools(lambda: settings, host=lambda: "claude-code", project=lambda: project).catalog(legacy=True)


def answer(tools, name: str, **args) -> dict:
    return json.loads(call_json(tools, name, args))


def cli(database, tmp_path: Path, *args: str):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    return CliRunner().invoke(app, [*base, *args])


def test_agents_writes_wait_for_the_users_approval(database, tmp_path):
    settings = settings_of(database, tmp_path)
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    tersely = alice.add("Answers tersely.", topic="style").fact.id
    tabs = alice.add("Prefers tabs.", topic="style").fact.id
    bob.add("Answers tersely.", topic="style")
    database.add_memory("m1", "Never force-push.", metadata='{"topic": "git"}')
    in_shop, in_blog = tools_of(settings, SHOP), tools_of(settings, BLOG)
    asked = [answer(in_shop, "persona_add", profile="alice", content="Runs tests with tox.", topic="tests",
                    scope="project"),
             answer(in_blog, "persona_add", profile="alice", content="Builds with hugo.", topic="build",
                    scope="project"),
             answer(in_shop, "persona_replace", profile="alice", persona_id=tersely, content="Answers at length."),
             answer(in_shop, "persona_demote", profile="alice", persona_id=tabs),
             answer(in_shop, "mnemosyne_persona_promote", profile="alice", memory_id="m1")]
    for said in asked:
        assert said["status"] == "ok" and said["awaiting_approval"] is True, said
        assert "awaits the user's approval" in said["next"] and said["held"].startswith("w")
    assert sorted(f.content for f in alice.list()) == ["Answers tersely.", "Prefers tabs."]  # nothing written yet
    assert not (tmp_path / "p-alice.md").exists() or "tox" not in (tmp_path / "p-alice.md").read_text()
    assert bob.held_writes() == [] and len(alice.held_writes()) == 5
    listed = cli(database, tmp_path, "review", "-p", "alice")
    assert listed.exit_code == 0 and "add to tests: Runs tests with tox." in listed.output
    assert "tool:claude-code" in listed.output and f"replace #{tersely} with: Answers at length." in listed.output
    assert "no held" not in cli(database, tmp_path, "review", "-p", "bob").output
    names = [write.name for write in alice.held_writes()]
    for name in names[:3]:
        accepted = cli(database, tmp_path, "review", "accept", name, "-p", "alice")
        assert accepted.exit_code == 0 and f"{name} accepted" in accepted.output, accepted.output
    dismissed = cli(database, tmp_path, "review", "dismiss", names[3], "-p", "alice", "--json")
    assert json.loads(dismissed.output)["action"] == "demote"
    facts = {f.content: f for f in alice.list()}
    assert set(facts) == {"Runs tests with tox.", "Builds with hugo.", "Answers at length.", "Prefers tabs."}
    assert facts["Runs tests with tox."].scope == f"project:{SHOP}"  # scoped as the agent asked, in its project
    assert facts["Builds with hugo."].scope == f"project:{BLOG}"
    assert {facts[text].writer for text in ("Runs tests with tox.", "Answers at length.")} == {"tool:claude-code"}
    assert [f.content for f in bob.list()] == ["Answers tersely."]
    missing = cli(database, tmp_path, "review", "accept", names[3], "-p", "alice")
    assert missing.exit_code == 1 and f"no held write {names[3]} in profile 'alice'" in missing.output
    bad = cli(database, tmp_path, "review", "accept", "x1", "-p", "alice")
    assert bad.exit_code == 1 and "invalid proposal 'x1'" in bad.output


def test_an_agents_accept_of_a_proposal_waits_and_allow_keeps_todays_behaviour(database, tmp_path):
    alice = database.store(profile="alice")
    alice.add("Uses npm for JavaScript projects", topic="tools")
    alice.add("Uses pnpm for JavaScript projects", topic="tools")
    [proposal] = alice.proposals()
    waits = answer(tools_of(settings_of(database, tmp_path), None), "persona_review", profile="alice",
                   action="accept", proposal=proposal.id)
    assert waits["awaiting_approval"] is True and [p.id for p in alice.proposals()] == [proposal.id]
    allowed = tools_of(settings_of(database, tmp_path, "allow"), None)
    assert answer(allowed, "persona_review", profile="alice", action="accept", proposal=proposal.id)["status"] == "ok"
    added = answer(allowed, "persona_add", profile="alice", content="Answers tersely.", topic="style")
    assert added["created"] is True and "awaiting_approval" not in added and alice.held_writes() == []
    assert load_settings().writes.agents == "allow"  # the default: today's behaviour


def test_forgotten_text_is_never_held_and_a_forget_erases_a_held_write(database, tmp_path):
    settings = settings_of(database, tmp_path)
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    gone = alice.add("Lives in Berlin.", topic="home").fact.id
    forget(settings, alice, gone)
    with pytest.raises(ForgottenError):
        alice.hold("add", content="lives in berlin", topic="home")
    refused = answer(tools_of(settings, None), "persona_add", profile="alice", content="Lives in Berlin.", topic="x")
    assert refused["status"] == "error" and alice.held_writes() == []
    kept = alice.add("Has a cat.", topic="pets").fact.id
    answer(tools_of(settings, None), "persona_add", profile="alice", content="Has a cat named Tom.", topic="pets")
    answer(tools_of(settings, None), "persona_add", profile="alice", content="has a cat", topic="pets")
    answer(tools_of(settings, None), "persona_add", profile="bob", content="Has a cat.", topic="pets")
    forget(settings, alice, kept)
    assert [w.content for w in alice.held_writes()] == ["Has a cat named Tom."]  # the same text went, the other stays
    assert [w.content for w in bob.held_writes()] == ["Has a cat."]  # bob's own write is his
    assert sorted(str(row[6]) for row in database.rows("persona_held")) == ["Has a cat named Tom.", "Has a cat."]


@pytest.fixture
def home(hermes_home: Path) -> Path:
    write(hermes_home / "memory" / "persona.md", "")
    write(hermes_home / "mnemosyne" / "persona.yaml", "writes:\n  agents: ask\n")
    return hermes_home


def test_hermes_tools_answer_that_the_fact_awaits_approval(plugin, home):
    said = json.loads(plugin._handler("persona_add")({"content": "Uses uv.", "topic": "tools"}, session_id="s1"))
    assert said["status"] == "ok" and said["awaiting_approval"] and said["write"]["writer"] == "tool:hermes"
    assert json.loads(plugin._handler("persona_list")({}, session_id="s1"))["count"] == 0
    from pipeline.integrations.hermes_binding import hermes_settings

    with PersonaStore.from_settings(hermes_settings(home)) as store:
        store.approve(said["held"])
        assert [(f.content, f.writer) for f in store.list()] == [("Uses uv.", "tool:hermes")]


@pytest.mark.anyio
async def test_mcp_tools_answer_that_the_fact_awaits_approval(workdir):  # noqa: F811
    params = server(workdir)
    asking = StdioServerParameters(command=sys.executable, args=params.args, cwd=params.cwd,
                                   env={**(params.env or {}), "MNEMOSYNE_PERSONA_WRITES__AGENTS": "ask"})
    async with Client(asking) as client:
        added = await client.call_tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
        assert not added.is_error and added.structured_content["awaiting_approval"] is True
        assert "awaits the user's approval" in added.structured_content["next"]
        listed = await client.call_tool("persona_list", {})
        assert listed.structured_content["count"] == 0
    with PersonaStore(workdir / "m.db") as store, PersonaStore(workdir / "m.db", profile="bob") as bob:
        [held] = store.held_writes()
        assert held.content == "Answers tersely." and held.writer.startswith("tool:") and bob.held_writes() == []


@pytest.mark.slow
def test_the_page_lists_held_writes_and_accepts_or_dismisses_them(tmp_path):
    from ..ui.running import config_file, start
    from ..ui.test_ui_writes import note

    overrides = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md"),
                 "writes.agents": "ask"}
    settings = load_settings(overrides=overrides)
    tools = tools_of(settings, SHOP)
    answer(tools, "persona_add", content="Runs tests with tox.", topic="tests", scope="project")
    answer(tools, "persona_add", content="Prefers tabs.", topic="style")
    answer(tools, "persona_add", profile="bob", content="Likes jazz.", topic="music")
    running = start(tmp_path, config_file(tmp_path, overrides))
    try:
        cookie = running.login()
        page = html.unescape(running.get("/proposals", cookie).body)
        assert "Agents' writes awaiting your approval" in page
        assert "add to tests: Runs tests with tox." in page and "Likes jazz." not in page
        assert "accepted w1 (add, asked by tool:claude-code)" in note(running, cookie, "accept-write", {"held": "w1"})
        assert "dismissed w2: nothing was written" in note(running, cookie, "dismiss-write", {"held": "w2"})
    finally:
        assert running.stop() == 0
    with PersonaStore.from_settings(settings) as store:
        assert [(f.content, f.scope) for f in store.list()] == [("Runs tests with tox.", f"project:{SHOP}")]
        assert store.held_writes() == []
