"""Scoped facts: each target carries the facts its host should see, once; a project's facts follow every clone of
its repository and no other. Facts are global, of a project, or of one host (pipeline/scopes.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.fs.projects import normalise_remote, project_of

from ..conftest import write

runner = CliRunner()
TERSE, PNPM, NPM, CURSOR, PLAN, CODEX = ("Answers tersely.", "Uses pnpm, never npm, here.", "Uses npm here.",
                                         "Never runs the terminal without asking.", "Starts in plan mode.",
                                         "Runs the tests before every answer.")


def repository(path: Path, remote: str | None) -> Path:
    """A git checkout as git leaves it: .git/config, with the origin remote when there is one."""
    config = '[core]\n\trepositoryformatversion = 0\n'
    if remote:
        config += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    write(path / ".git" / "config", config)
    (path / "src").mkdir()
    return path


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """Two clones of one repository, another repository, and a directory with no repository; one store."""
    places = {"a": repository(tmp_path / "a", "git@github.com:me/a.git"),
              "a2": repository(tmp_path / "elsewhere" / "a-copy", "https://me@GitHub.com/me/a/"),
              "b": repository(tmp_path / "b", "git@github.com:me/b.git"),
              "plain": tmp_path / "plain", "config": write(tmp_path / "persona.yaml", "")}
    places["plain"].mkdir()
    for project in ("a", "b"):
        write(places[project] / "CLAUDE.md", f"# Rules of {project}, by hand\n\n- Keep it simple.\n")
    write(Path.home() / ".claude" / "CLAUDE.md", "# My own rules\n\n- Be kind.\n")
    return places


def cli(world: dict[str, Path], *args: str):
    return runner.invoke(app, ["--db", str(world["config"].parent / "m.db"), "-c", str(world["config"]), *args])


def region(path: Path) -> str:
    text = path.read_text()
    found = re.search(r"<!-- persona-tier:begin[^\n]*-->\n(.*?)<!-- persona-tier:end", text, re.S)
    assert found, text
    return found.group(1)


def seed(world: dict[str, Path]) -> None:
    for args in ([TERSE, "--topic", "style"], [PNPM, "--topic", "tools", "--project", str(world["a"] / "src")],
                 [NPM, "--topic", "tools", "--project", str(world["b"])],
                 [CURSOR, "--topic", "safety", "--host", "cursor"], [PLAN, "--topic", "flow", "--host", "claude-code"],
                 [CODEX, "--topic", "flow", "--host", "codex"]):
        done = cli(world, "add", *args)
        assert done.exit_code == 0, done.output
    for preset, where in (("claude-code", "--user"), ("claude-code", world["a"]), ("claude-code", world["b"]),
                          ("codex", "--user"), ("codex", world["a"]), ("cursor", world["a"])):
        name = f"{preset}-{'user' if where == '--user' else Path(where).name}"
        place = ["--user"] if where == "--user" else ["--shared", "--project", str(where)]  # a region, as written
        done = cli(world, "targets", "add", preset, *place, "--name", name)
        assert done.exit_code == 0, done.output
    rendered = cli(world, "render")
    assert rendered.exit_code == 0, rendered.output


def facts_in(text: str) -> set[str]:
    return {fact for fact in (TERSE, PNPM, NPM, CURSOR, PLAN, CODEX) if fact in text}


def test_each_file_holds_exactly_the_facts_its_host_should_see_once(world):
    seed(world)
    home = Path.home()
    claude_user, claude_a = region(home / ".claude" / "CLAUDE.md"), region(world["a"] / "CLAUDE.md")
    assert facts_in(claude_user) == {TERSE, PLAN}  # the user-level file: global and the host's own
    assert facts_in(claude_a) == {PNPM} and facts_in(region(world["b"] / "CLAUDE.md")) == {NPM}
    assert facts_in(region(home / ".codex" / "AGENTS.md")) == {TERSE, CODEX}
    assert facts_in(region(world["a"] / "AGENTS.md")) == {PNPM}
    cursor = (world["a"] / ".cursor" / "rules" / "persona.mdc").read_text()
    assert facts_in(cursor) == {TERSE, CURSOR, PNPM}  # no user-level file of Cursor's: all three here
    together = claude_user + claude_a  # what Claude Code loads in project a
    assert all(together.count(fact) == 1 for fact in facts_in(together)) and facts_in(together) == {TERSE, PLAN, PNPM}
    assert "- Be kind." in (home / ".claude" / "CLAUDE.md").read_text()  # the user's own lines stay
    assert "Keep it simple." in (world["a"] / "CLAUDE.md").read_text()


def test_a_project_file_alone_shows_every_scope_its_host_needs(world):
    """With no user-level target of its host, a project file is the only one the host gets from us: it carries
    the global facts and the host's too, else they would never arrive."""
    seed(world)
    for name in ("claude-code-user", "codex-user"):
        assert cli(world, "targets", "remove", name).exit_code == 0
    assert cli(world, "render").exit_code == 0
    assert facts_in(region(world["a"] / "CLAUDE.md")) == {TERSE, PLAN, PNPM}
    assert facts_in(region(world["b"] / "CLAUDE.md")) == {TERSE, PLAN, NPM}
    assert facts_in(region(world["a"] / "AGENTS.md")) == {TERSE, CODEX, PNPM}


def test_a_projects_facts_follow_a_second_clone_and_no_other_repository(world):
    assert project_of(world["a"]).identity == project_of(world["a2"] / "src").identity == "github.com/me/a"
    assert project_of(world["b"]).identity == "github.com/me/b"
    assert project_of(world["plain"]).identity == str(world["plain"].resolve())
    seed(world)
    added = cli(world, "add", "Formats with biome.", "--topic", "tools", "--project", str(world["a2"]))
    assert added.exit_code == 0, added.output
    assert cli(world, "render").exit_code == 0
    assert "Formats with biome." in region(world["a"] / "CLAUDE.md")
    assert "Formats with biome." not in region(world["b"] / "CLAUDE.md")
    listed = json.loads(cli(world, "list", "--project", str(world["a2"]), "--json").stdout)
    assert {fact["content"] for fact in listed} == {PNPM, "Formats with biome."}
    assert {fact["scope"] for fact in listed} == {"project:github.com/me/a"}


def test_explain_says_why_a_fact_is_not_in_a_target(world):
    seed(world)
    explained = json.loads(cli(world, "explain", "--target", "claude-code-b", "--json").stdout)[0]
    fates = {fact["content"]: fact["fate"] for fact in explained["facts"]}
    assert fates[NPM] == "kept"
    assert fates[PNPM] == "out of scope (project github.com/me/a; this target shows project github.com/me/b)"
    assert fates[TERSE].startswith("out of scope (global;")


def test_project_list_and_move_carry_a_projects_facts(world):
    seed(world)
    listed = json.loads(cli(world, "project", "list", "--json").stdout)
    assert {row["project"]: row["facts"] for row in listed} == {"github.com/me/a": 1, "github.com/me/b": 1}
    moved = cli(world, "project", "move", "github.com/me/b", "gitlab.com/me/b")
    assert moved.exit_code == 0 and "moved 1 fact(s)" in moved.stdout, moved.output
    assert cli(world, "render").exit_code == 0
    assert NPM not in region(world["b"] / "CLAUDE.md")  # b's checkout still says github.com/me/b
    again = cli(world, "project", "move", "github.com/me/b", "github.com/me/c")
    assert again.exit_code == 1 and "no facts for project github.com/me/b" in again.stderr


def test_the_same_text_in_two_projects_is_two_facts_and_a_host_scope_is_checked(world):
    for where in ("a", "b"):
        assert cli(world, "add", "Uses make.", "--topic", "t", "--project", str(world[where])).exit_code == 0
    assert cli(world, "add", "Uses make.", "--topic", "t", "--project", str(world["a2"])).exit_code == 0
    with PersonaStore(world["config"].parent / "m.db") as store:
        assert sorted(fact.scope or "" for fact in store.list()) == ["project:github.com/me/a",
                                                                     "project:github.com/me/b"]
    wrong = cli(world, "add", "x", "--topic", "t", "--host", "notepad")
    assert wrong.exit_code == 2 and "notepad" in wrong.output
    both = cli(world, "add", "x", "--topic", "t", "--host", "cursor", "--project", str(world["a"]))
    assert both.exit_code == 2 and "not both" in both.output


@pytest.mark.parametrize(("url", "identity"), [
    ("git@github.com:me/a.git", "github.com/me/a"), ("https://github.com/me/a", "github.com/me/a"),
    ("https://user:token@GitHub.com/me/a.git/", "github.com/me/a"),
    ("ssh://git@github.com:22/me/a.git", "github.com/me/a"),
    ("git://example.org/team/proj", "example.org/team/proj")])
def test_every_spelling_of_a_remote_is_one_project(url, identity):
    assert normalise_remote(url) == identity


def test_a_projects_key_wins_over_the_global_one_only_in_that_projects_files(world):
    """A key is a slot of one scope: the project's package_manager does not supersede the global one, and where a
    target shows both (Cursor's project rule: global, host and project), the project's is the one shown."""
    seed(world)
    facts = write(world["config"].parent / "keys.yaml", f"""
- {{topic: tools, content: Uses npm for everything., key: package_manager}}
- {{topic: tools, content: Uses bun in this repository., key: package_manager, scope: {{project: {world["a"]}}}}}
""")
    assert cli(world, "import", str(facts)).exit_code == 0
    assert cli(world, "render").exit_code == 0
    cursor_a = (world["a"] / ".cursor" / "rules" / "persona.mdc").read_text()
    assert "Uses bun in this repository." in cursor_a and "Uses npm for everything." not in cursor_a
    assert TERSE in cursor_a  # the rest of the global facts stay
    assert "Uses npm for everything." in region(Path.home() / ".claude" / "CLAUDE.md")
    assert "Uses bun in this repository." not in region(Path.home() / ".claude" / "CLAUDE.md")
    listed = {fact["content"] for fact in json.loads(cli(world, "list", "--json").stdout)}
    assert {"Uses npm for everything.", "Uses bun in this repository."} <= listed  # neither superseded the other
    explained = json.loads(cli(world, "explain", "--target", "cursor-a", "--json").stdout)[0]
    fate = {fact["content"]: fact["fate"] for fact in explained["facts"]}["Uses npm for everything."]
    assert fate.startswith("key package_manager: #") and "of project github.com/me/a holds it here" in fate


def test_a_project_named_by_its_identity_or_url_is_that_project_wherever_the_command_runs(world, monkeypatch):
    """`--project IDENTITY` from inside another checkout, `project move` to a URL, and a relative local remote
    all name the same project whatever the working directory; a relative project in a config is refused."""
    monkeypatch.chdir(world["b"] / "src")
    assert cli(world, "add", "Meant for a.", "--topic", "t", "--project", "GitHub.com/me/a.git").exit_code == 0
    listed = json.loads(cli(world, "list", "--project", "github.com/me/a", "--json").stdout)
    assert [(fact["content"], fact["scope"]) for fact in listed] == [("Meant for a.", "project:github.com/me/a")]
    moved = cli(world, "project", "move", "github.com/me/a", "git@github.com:me/renamed.git")
    assert moved.exit_code == 0 and "to github.com/me/renamed" in moved.stdout
    up = world["plain"]  # remotes given as relative local paths, from two depths
    for name, depth in (("x", 1), ("y/z", 2)):
        repository(up / name, "../" * depth + "upstream")
    monkeypatch.chdir(world["plain"] / "x")
    here = project_of(up / "x").identity
    monkeypatch.chdir(world["plain"] / "y" / "z")
    assert project_of(up / "x").identity == here == str((up / "upstream").resolve())
    assert project_of(up / "y" / "z").identity == here  # two clones of one local upstream: one project
    relative = cli(world, "--set", "targets.rel.path=" + str(world["plain"] / "rel.md"), "--set",
                   "targets.rel.project=./x", "render")
    assert relative.exit_code != 0 and "is a relative path; give an absolute path" in relative.output


def test_adopting_or_importing_a_projects_file_keeps_its_rules_in_that_project(world):
    """A project's own instruction file holds that project's rules: adopting its target's file, or importing it
    with --project, scopes them to it, so they never reach another repository's file."""
    rule = world["a"] / ".cursor" / "rules" / "persona.mdc"
    write(rule, "---\ndescription: mine\nalwaysApply: true\n---\n\n- Deploys through the a-only pipeline.\n")
    for name, place in (("cursor-a", world["a"]), ("cursor-b", world["b"])):
        assert cli(world, "targets", "add", "cursor", "--project", str(place), "--name", name).exit_code == 0
    adopted = cli(world, "adopt", str(rule))
    assert adopted.exit_code == 0, adopted.output
    assert "Deploys through the a-only pipeline." in rule.read_text()
    imported = cli(world, "import", "--from", "instructions", str(world["b"] / "CLAUDE.md"), "--project",
                   str(world["b"]))
    assert imported.exit_code == 0, imported.output
    scopes = {fact["content"]: fact["scope"] for fact in json.loads(cli(world, "list", "--json").stdout)}
    assert scopes["Deploys through the a-only pipeline."] == "project:github.com/me/a"
    assert scopes["Keep it simple."] == "project:github.com/me/b"
    assert cli(world, "render").exit_code == 0
    assert "Keep it simple." not in rule.read_text() and "Deploys through" in rule.read_text()
    theirs = (world["b"] / ".cursor" / "rules" / "persona.mdc").read_text()
    assert "a-only" not in theirs and "Keep it simple." in theirs


def test_moving_a_project_onto_one_that_holds_the_same_key_is_refused_and_changes_nothing(world):
    facts = write(world["config"].parent / "k.yaml", f"""
- {{topic: tools, content: Uses npm here., key: package_manager, scope: {{project: {world["a"]}}}}}
- {{topic: tools, content: Uses yarn there., key: package_manager, scope: {{project: {world["b"]}}}}}
""")
    assert cli(world, "import", str(facts)).exit_code == 0
    before = cli(world, "list", "--json").stdout
    moved = cli(world, "project", "move", "github.com/me/a", "github.com/me/b")
    assert moved.exit_code == 1 and "both projects hold a fact with key package_manager" in moved.output
    assert "nothing was moved" in moved.output and "UNIQUE" not in moved.output
    assert cli(world, "list", "--json").stdout == before


def test_a_global_fact_is_spelled_global_in_the_table_the_json_and_the_tools(world):
    """One spelling for the scope of a fact that is true everywhere: `global`, as the facts file and the page say
    it, never JSON's null."""
    from pipeline import load_settings
    from pipeline.integrations.tools import PersonaTools

    assert cli(world, "add", TERSE, "--topic", "style").exit_code == 0
    assert cli(world, "add", PNPM, "--topic", "tools", "--project", str(world["a"])).exit_code == 0
    row = next(line for line in cli(world, "list").stdout.splitlines() if TERSE in line)
    assert re.search(r"\bglobal\b", row), row
    listed = {fact["content"]: fact["scope"] for fact in json.loads(cli(world, "list", "--json").stdout)}
    assert listed == {TERSE: "global", PNPM: "project:github.com/me/a"}
    added = json.loads(cli(world, "add", "Prefers tea.", "--topic", "drinks", "--json").stdout)
    assert added["fact"]["scope"] == "global"
    settings = load_settings(overrides={"store.path": str(world["config"].parent / "m.db")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    assert {fact["content"]: fact["scope"] for fact in tools["persona_list"]()["personas"]} == {
        TERSE: "global", "Prefers tea.": "global"}  # the project's fact is not this session's
