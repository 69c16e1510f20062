"""The real OpenCode (`opencode run`) reads what our preset gives it: once, beside the user's own text, and through
Claude Code's ~/.claude/CLAUDE.md while the user has no ~/.config/opencode/AGENTS.md of their own.

Everything is checked in the requests the fake model received. OpenCode 1.18.33 sends, in its system message,
each file as "Instructions from: PATH" and its text whole: the first of ~/.config/opencode/AGENTS.md and
~/.claude/CLAUDE.md that exists, then the project's AGENTS.md files from the working directory up to the git root
(nearest first), or its CLAUDE.md files where there is no AGENTS.md. It runs offline: its OpenAI-compatible
provider package is bundled.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .facts import (
    OWN_PROJECT,
    OWN_USER,
    add_facts,
    add_scoped_facts,
    assert_each_fact_once,
    assert_intact,
    assert_scoped_facts,
    main_request,
    user_and_project_regions,
    write_own,
)
from .fake_model import FakeModel
from .hosts import OPENCODE, Host, persona, run_opencode

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("host", [OPENCODE], ids=str, indirect=True)]
OWN_CLAUDE = "# Claude's rules\n\nPrefer small commits in every repository.\n"


def user_file(home: Path) -> Path:
    return home / ".config" / "opencode" / "AGENTS.md"


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_region_reaches_opencode_once_beside_the_users_own_text(
        host: Host, scope: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    users, projects = write_own(user_file(home), OWN_USER), write_own(project / "AGENTS.md", OWN_PROJECT)
    persona(home, "targets", "add", "opencode", *([scope] if scope == "--user" else [scope, str(project)]))
    add_facts(home)
    add_scoped_facts(home, "opencode", project, tmp_path / "elsewhere")
    persona(home, "render")
    request = main_request(run_opencode(model, project, home, "hello"))
    assert_scoped_facts(request, project=scope == "--project")  # a user-level file: no project's facts
    assert_intact(request, *OWN_USER.split("\n\n", 1), *OWN_PROJECT.split("\n\n", 1), users.read_text(),
                  projects.read_text())


def test_with_a_user_and_a_project_region_opencode_gets_each_fact_of_its_scopes_once(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    write_own(user_file(home), OWN_USER)
    write_own(project / "AGENTS.md", OWN_PROJECT)
    user_and_project_regions(home, "opencode", project, tmp_path / "elsewhere")
    assert_scoped_facts(main_request(run_opencode(model, project, home, "hello")), project=True)


def test_opencode_reads_claude_codes_file_until_the_user_makes_its_own_and_each_fact_arrives_once(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """A user with Claude Code and OpenCode targets and no ~/.config/opencode/AGENTS.md: OpenCode reads
    ~/.claude/CLAUDE.md, so our OpenCode target waits (a file of ours would stop OpenCode reading the user's) and
    each fact reaches it once, through Claude Code's region. Once the user makes their own file, OpenCode reads it
    and not CLAUDE.md: the next render fills the OpenCode target in, and each fact still arrives once."""
    claude = write_own(home / ".claude" / "CLAUDE.md", OWN_CLAUDE)
    persona(home, "targets", "add", "claude-code", "--user")
    said = persona(home, "targets", "add", "opencode", "--user")
    assert f"OpenCode reads {claude} while {user_file(home)} is absent" in said
    add_facts(home)
    assert "opencode: not written: OpenCode reads" in persona(home, "render")
    assert not user_file(home).exists()
    assert "waiting: the host reads" in persona(home, "targets", "check")  # and exits 0: nothing is lost
    request = main_request(run_opencode(model, project, home, "hello"))
    assert_each_fact_once(request)
    assert_intact(request, claude.read_text())

    write_own(user_file(home), OWN_USER)  # the user's own file, from now on the one OpenCode reads
    persona(home, "render")
    assert "persona-tier:begin" in user_file(home).read_text()
    request = main_request(run_opencode(model, project, home, "hello"))
    assert_each_fact_once(request)
    assert_intact(request, user_file(home).read_text())
    assert OWN_CLAUDE.strip() not in request.text


def test_opencode_loads_every_agents_md_up_to_the_git_root_in_the_order_targets_check_lists_them(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    root = write_own(project / "AGENTS.md", OWN_PROJECT)
    nested = write_own(project / "service" / "AGENTS.md", "# The service\n\nLog in JSON.\n")
    claude = write_own(project / "service" / "CLAUDE.md", OWN_CLAUDE)  # hidden: AGENTS.md is up the tree
    persona(home, "targets", "add", "opencode", "--project", str(nested.parent), "--shared")
    add_facts(home)
    persona(home, "render")
    request = main_request(run_opencode(model, nested.parent, home, "hello"))
    assert_each_fact_once(request)
    text = request.text
    assert OWN_CLAUDE.strip() not in text
    assert text.index(f"Instructions from: {nested}") < text.index(f"Instructions from: {root}")
    said = json.loads(persona(home, "targets", "check", "--project", str(nested.parent), "--json"))
    report = next(report for report in said if report.get("host") == "opencode")
    assert report["loaded"] == [str(nested), str(root)] and str(claude) not in report["loaded"]


def test_a_fact_reaches_opencode_as_written(host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """OpenCode's loader interprets nothing: `@path`, braces, an HTML comment and a leading `#` arrive as written
    (a fact never starts a line: the `#` is escaped for every host), and no file is spliced in."""
    write_own(project / "notes" / "todo.md", "SECRET-PROJECT-NOTES\n")
    facts = {"notes": "Reads @notes/todo.md first", "jinja": "Says {{ name }} and {% raw %} aloud",
             "comment": "<!-- keep this --> is a fact too", "heading": "# Not a heading, a fact"}
    persona(home, "targets", "add", "opencode", "--project", str(project))
    add_facts(home, facts)
    persona(home, "render")
    requests = run_opencode(model, project, home, "hello")
    assert [request.api for request in requests] == ["chat"]  # the turn's one call: no title is generated
    text = main_request(requests).text
    assert "SECRET-" not in text
    for fact in facts.values():
        assert text.count("\\" + fact if fact.startswith("#") else fact) == 1, fact
