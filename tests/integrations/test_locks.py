"""Locked facts (issue 53, point 3): `persona lock ID` marks a fact no agent tool may replace, demote, merge or
forget; each such tool answers a clear error naming the lock (never a crash), through the Python tools, the Hermes
plugin's handlers and the real MCP SDK client; the CLI and the page still change it; `unlock` undoes it. Both
backends, two profiles (alice's lock is never bob's) and two projects (a lock holds in the fact's own project)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from typer.testing import CliRunner

from pipeline import NotFoundError, PersonaStore, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json

from ..conftest import write
from .test_mcp import server, workdir  # noqa: F401 (the fixture)

NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"
SHOP, BLOG = "project:github.com/acme/shop", "project:github.com/acme/blog"


def cli(database, tmp_path: Path, *args: str):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    return CliRunner().invoke(app, [*base, *args])


def tools_of(database, tmp_path: Path, project: str | None = None):
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "p-{profile}.md")})
    return PersonaTools(lambda: settings, project=lambda: project).catalog(legacy=True)


def answer(tools, name: str, **args) -> dict:
    return json.loads(call_json(tools, name, args))


def seeded(store: PersonaStore) -> dict[str, int]:
    """Alice's or bob's facts: a global one, one in each project, and an npm/pnpm pair with its proposal."""
    return {"style": store.add("Answers tersely.", topic="style").fact.id,
            "shop": store.add("Runs the shop's tests with tox.", topic="tests", scope=SHOP).fact.id,
            "blog": store.add("Builds the blog with hugo.", topic="build", scope=BLOG).fact.id,
            "npm": store.add(NPM, topic="tools").fact.id, "pnpm": store.add(PNPM, topic="tools").fact.id}


def test_no_agent_tool_changes_a_locked_fact_and_each_says_why(database, tmp_path):
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    mine, theirs = seeded(alice), seeded(bob)
    for name in ("style", "shop", "npm"):
        assert alice.lock_fact(mine[name]) is True
    assert alice.lock_fact(mine["style"]) is False and alice.locked_ids() == {mine["style"], mine["shop"], mine["npm"]}
    assert bob.locked_ids() == set()
    in_shop = tools_of(database, tmp_path, project="github.com/acme/shop")
    refusals = [
        ("persona_replace", {"persona_id": mine["style"], "content": "Answers at length."}, "replace"),
        ("persona_replace", {"old_text": "tox", "content": "Runs the shop's tests with nox."}, "replace"),
        ("persona_demote", {"persona_id": mine["shop"]}, "demote"),
        ("mnemosyne_persona_demote", {"persona_id": mine["style"]}, "demote"),
        ("persona_forget", {"persona_id": mine["style"]}, "forget"),
        ("persona_review", {"action": "accept", "proposal": alice.proposals()[0].id}, "replace"),
    ]
    for name, args, doing in refusals:
        said = answer(in_shop, name, profile="alice", **args)
        assert said["status"] == "error", (name, said)
        assert f"is locked: no agent tool may {doing} it" in said["error"]
    assert sorted(f.content for f in alice.list()) == sorted([
        "Answers tersely.", "Runs the shop's tests with tox.", "Builds the blog with hugo.", NPM, PNPM])
    # The other project's fact, and bob's same facts, are not locked: the same tools change them.
    in_blog = tools_of(database, tmp_path, project="github.com/acme/blog")
    assert answer(in_blog, "persona_replace", profile="alice", old_text="hugo",
                  content="Builds the blog with zola.")["status"] == "ok"
    assert answer(in_shop, "persona_replace", profile="bob", persona_id=theirs["style"],
                  content="Answers at length.")["status"] == "ok"
    assert answer(in_shop, "persona_demote", profile="bob", persona_id=theirs["shop"])["status"] == "ok"
    assert answer(in_shop, "persona_review", profile="bob", action="accept",
                  proposal=bob.proposals()[0].id)["status"] == "ok"
    # unlock undoes it: the agent may replace the fact again.
    assert alice.unlock_fact(mine["style"]) is True and alice.unlock_fact(mine["style"]) is False
    assert answer(in_shop, "persona_replace", profile="alice", persona_id=mine["style"],
                  content="Answers at length.")["status"] == "ok"


def test_a_merge_that_lets_a_locked_fact_go_is_refused_to_an_agent(database, tmp_path):
    alice = database.store(profile="alice")
    short = alice.add("Prefers tabs.", topic="style").fact.id
    alice.add("Prefers tabs, width four.", topic="style")
    [merge] = alice.proposals()
    assert merge.kind == "merge" and merge.old.id == short
    alice.lock_fact(short)
    said = answer(tools_of(database, tmp_path), "persona_review", profile="alice", action="accept", proposal=merge.id)
    assert said["status"] == "error" and f"#{short} is locked: no agent tool may merge it" in said["error"]
    assert alice.accept(merge.id).old.id == short  # the user may


def test_the_cli_locks_and_still_changes_a_locked_fact(database, tmp_path):
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    mine, theirs = seeded(alice), seeded(bob)
    locked = cli(database, tmp_path, "lock", str(mine["shop"]), "-p", "alice")
    assert locked.exit_code == 0 and f"#{mine['shop']} is now locked" in locked.output
    again = cli(database, tmp_path, "lock", str(mine["shop"]), "-p", "alice", "--json")
    assert json.loads(again.output) == {"persona_id": mine["shop"], "locked": True, "changed": False}
    missing = cli(database, tmp_path, "lock", "999999", "-p", "alice")
    assert missing.exit_code == 1 and "no persona fact with id 999999 in profile 'alice'" in missing.output
    assert bob.locked_ids() == set()
    replaced = cli(database, tmp_path, "replace", str(mine["shop"]), "Runs the shop's tests with nox.", "-p", "alice")
    assert replaced.exit_code == 0, replaced.output
    assert [f.scope for f in alice.list() if "nox" in f.content] == [SHOP]
    # Undoing the user's replace brings the fact back locked; the user's forget takes the lock with it.
    assert alice.undo_replace(alice.list(topic="tests")[0].id).restored
    assert mine["shop"] in alice.locked_ids()
    forgot = cli(database, tmp_path, "forget", str(mine["shop"]), "-p", "alice")
    assert forgot.exit_code == 0, forgot.output
    assert alice.locked_ids() == set()
    unlocked = cli(database, tmp_path, "unlock", str(theirs["npm"]), "-p", "bob")
    assert unlocked.exit_code == 0 and "was already unlocked" in unlocked.output
    with pytest.raises(NotFoundError, match="no persona fact with id 999999"):
        alice.unlock_fact(999999)


@pytest.fixture
def home(hermes_home: Path) -> Path:
    write(hermes_home / "memory" / "persona.md", "")
    return hermes_home


def test_hermes_tools_answer_that_a_fact_is_locked(plugin, home):
    add = plugin._handler("persona_add")
    fact = json.loads(add({"content": "Uses uv.", "topic": "tools"}, session_id="s1"))["persona_id"]
    other = json.loads(add({"content": "Answers tersely.", "topic": "style"}, session_id="s1"))["persona_id"]
    from pipeline.integrations.hermes_binding import hermes_settings

    with PersonaStore.from_settings(hermes_settings(home)) as store:
        store.lock_fact(fact)
    for name, args in (("persona_replace", {"persona_id": fact, "content": "Uses pip."}),
                       ("persona_demote", {"persona_id": fact}), ("persona_forget", {"persona_id": fact})):
        said = json.loads(plugin._handler(name)(args, session_id="s1"))
        assert said["status"] == "error" and f"#{fact} is locked" in said["error"], said
    assert json.loads(plugin._handler("persona_demote")({"persona_id": other}, session_id="s1"))["status"] == "ok"
    listed = json.loads(plugin._handler("persona_list")({}, session_id="s1"))
    assert [p["content"] for p in listed["personas"]] == ["Uses uv."]


@pytest.mark.anyio
async def test_mcp_tools_answer_a_tool_error_for_a_locked_fact(workdir):  # noqa: F811
    with PersonaStore(workdir / "m.db") as store:
        fact = store.add("Answers tersely.", topic="style").fact.id
        store.lock_fact(fact)
    with PersonaStore(workdir / "m.db", profile="bob") as bob:
        bobs = bob.add("Answers tersely.", topic="style").fact.id
    async with Client(server(workdir)) as client:
        for name, args in (("persona_replace", {"persona_id": fact, "content": "Answers at length."}),
                           ("persona_demote", {"persona_id": fact}), ("persona_forget", {"persona_id": fact})):
            refused = await client.call_tool(name, args)
            assert refused.is_error, (name, refused.content)
            assert f"persona fact #{fact} is locked" in refused.content[0].text
        assert not (await client.call_tool("persona_demote", {"persona_id": bobs, "profile": "bob"})).is_error
    with PersonaStore(workdir / "m.db") as store:
        assert [f.content for f in store.list()] == ["Answers tersely."]


@pytest.mark.slow
def test_the_page_locks_and_unlocks_a_fact(tmp_path):
    import html

    from ..ui.running import config_file, start
    from ..ui.test_ui_writes import note

    overrides = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}
    with PersonaStore(tmp_path / "m.db") as store, PersonaStore(tmp_path / "m.db", profile="bob") as bob:
        fact = store.add("Answers tersely.", topic="style").fact.id
        bobs = bob.add("Answers tersely.", topic="style").fact.id
    running = start(tmp_path, config_file(tmp_path, overrides))
    try:
        cookie = running.login()
        assert f"#{fact} is now locked" in note(running, cookie, "lock", {"id": str(fact)})
        assert 'action="/do/unlock"' in html.unescape(running.get("/", cookie).body)
        settings = load_settings(overrides=overrides)
        tools = PersonaTools(lambda: settings).catalog(legacy=False)
        assert "is locked" in answer(tools, "persona_demote", persona_id=fact)["error"]
        assert answer(tools, "persona_demote", persona_id=bobs, profile="bob")["status"] == "ok"
        assert f"#{fact} is now unlocked" in note(running, cookie, "unlock", {"id": str(fact)})
        assert answer(tools, "persona_demote", persona_id=fact)["status"] == "ok"
    finally:
        assert running.stop() == 0
