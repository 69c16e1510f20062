"""OpenCode, Amp, Zed, Goose and Kilo Code (#49): `targets add` writes the file each host loads, user-level and in
two projects; `targets check` predicts what the host loads, in its order; a user's file is never displaced
(OpenCode's fallback to ~/.claude/CLAUDE.md, Zed's `.rules` before AGENTS.md, Amp's CLAUDE.md); Goose's Jinja
shows a fact as written; and a project target changes no file git tracks.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import jinja2
import pytest
import yaml

from tests.config.persona_cli import persona, write_config

# host -> (its user-level file under the home, its project file)
FILES = {"opencode": (".config/opencode/AGENTS.md", "AGENTS.md"), "amp": (".config/amp/AGENTS.md", "AGENTS.md"),
         "zed": (".config/zed/AGENTS.md", ".rules"), "goose": (".config/goose/.goosehints", ".goosehints"),
         "kilo": (".kilocode/rules/persona.md", ".kilocode/rules/persona.md")}
FACT = "Never force-push; ask first."
PROJECT_FACT = "Ships this project's releases on Thursdays only."


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"  # tests/conftest.py made it and points HOME at it


def projects(tmp_path: Path) -> tuple[Path, Path]:
    made = tmp_path / "shop", tmp_path / "blog"
    for project in made:
        project.mkdir()
    return made


def target(config: Path, name: str) -> dict[str, object]:
    found: dict[str, object] = yaml.safe_load(config.read_text(encoding="utf-8"))["targets"][name]
    return found


def check(config: Path, project: Path, code: int = 0) -> dict[str, dict[str, object]]:
    """`targets check --json` for one project: each host's report by host (the targets' own checks left out)."""
    said = json.loads(persona(config, "targets", "check", "--project", str(project), "--json", code=code))
    return {report["host"]: report for report in said if "host" in report}


@pytest.mark.parametrize("host", sorted(FILES))
def test_each_host_gets_its_user_file_and_each_projects_own(config: Path, home: Path, tmp_path: Path,
                                                            host: str) -> None:
    shop, blog = projects(tmp_path)
    persona(config, "targets", "add", host, "--user", "--name", f"{host}-user")
    for project in (shop, blog):
        persona(config, "targets", "add", host, "--project", str(project), "--name", f"{host}-{project.name}")
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "add", PROJECT_FACT, "--topic", "release", "--project", str(shop))
    persona(config, "render")
    user, own = FILES[host]
    assert target(config, f"{host}-user")["path"] == str(home / user)
    assert FACT in (home / user).read_text(encoding="utf-8")
    assert PROJECT_FACT in (shop / own).read_text(encoding="utf-8")  # each project's facts only there
    assert PROJECT_FACT not in (blog / own).read_text(encoding="utf-8")
    assert FACT not in (shop / own).read_text(encoding="utf-8")  # the user-level file carries it: no fact twice
    for project in (shop, blog):
        report = check(config, project)[host]
        assert report["problems"] == [] and str(project / own) in report["loaded"], report
        assert str(home / user) in report["loaded"]


def test_opencode_waits_while_it_reads_claude_codes_file_then_takes_over(config: Path, home: Path,
                                                                        tmp_path: Path) -> None:
    claude = home / ".claude" / "CLAUDE.md"
    claude.parent.mkdir(parents=True)
    claude.write_text("# Mine\n\nSmall commits.\n", encoding="utf-8")
    own = home / ".config" / "opencode" / "AGENTS.md"
    persona(config, "targets", "add", "claude-code", "--user")
    assert f"OpenCode reads {claude} while {own} is absent" in persona(config, "targets", "add", "opencode", "--user")
    persona(config, "add", FACT, "--topic", "git")
    assert "opencode: not written: OpenCode reads" in persona(config, "render")
    assert not own.exists()  # a file of ours would stop OpenCode reading the user's CLAUDE.md
    report = check(config, tmp_path)["opencode"]
    assert report["loaded"] == [str(claude)] and report["problems"] == []  # the fact once, through Claude Code's
    assert "no persona file" not in persona(config, "status")  # no trigger waits for a file a render never writes

    own.parent.mkdir(parents=True)
    own.write_text("# My OpenCode rules\n", encoding="utf-8")  # the user makes their own: OpenCode reads only it
    persona(config, "render")
    assert FACT in own.read_text(encoding="utf-8") and own.read_text(encoding="utf-8").startswith("# My OpenCode")
    report = check(config, tmp_path)["opencode"]
    assert report["loaded"] == [str(own)] and report["problems"] == []


def test_opencode_reads_every_agents_md_up_to_the_git_root_nearest_first(config: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    service = repo / "service"
    service.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for path in (repo / "AGENTS.md", service / "CLAUDE.md"):
        path.write_text("# Theirs\n", encoding="utf-8")
    persona(config, "targets", "add", "opencode", "--project", str(service))
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "render")
    report = check(config, service)["opencode"]
    assert report["loaded"] == [str(service / "AGENTS.md"), str(repo / "AGENTS.md")]  # CLAUDE.md hidden


def test_a_waiting_opencode_target_with_nothing_of_ours_in_claude_md_fails_the_check(config: Path, home: Path,
                                                                                      tmp_path: Path) -> None:
    """Without a Claude Code target, OpenCode reads the user's own ~/.claude/CLAUDE.md and none of the persona:
    `targets check` exits 1, naming both ways in; a Claude Code target there makes it pass, the fact once."""
    claude = home / ".claude" / "CLAUDE.md"
    claude.parent.mkdir(parents=True)
    claude.write_text("# Mine\n", encoding="utf-8")
    persona(config, "targets", "add", "opencode", "--user")
    persona(config, "add", FACT, "--topic", "git")
    said = persona(config, "targets", "check", code=1)
    assert f"opencode: not loaded: the host reads {claude} while this file is absent, and nothing of ours" in said
    persona(config, "targets", "add", "claude-code", "--user")
    persona(config, "render")
    assert "opencode: waiting: the host reads" in persona(config, "targets", "check")


@pytest.mark.parametrize("host", ["opencode", "amp"])
def test_an_agents_md_that_would_hide_the_users_claude_md_is_refused(config: Path, tmp_path: Path,
                                                                    host: str) -> None:
    shop, blog = projects(tmp_path)
    (shop / "CLAUDE.md").write_text("# Shop rules\n", encoding="utf-8")
    before = config.read_bytes()
    said = persona(config, "targets", "add", host, "--project", str(shop), code=1)
    assert f"reads your {shop / 'CLAUDE.md'} only while there is no AGENTS.md" in said
    assert f"persona targets add {host} --user" in said
    assert config.read_bytes() == before and not (shop / "AGENTS.md").exists()
    persona(config, "targets", "add", host, "--project", str(blog))  # nothing to hide there
    assert target(config, host)["path"] == str(blog / "AGENTS.md")


def test_zed_writes_the_file_it_loads_and_never_hides_the_users(config: Path, tmp_path: Path) -> None:
    """Zed loads the first of .rules, ..., AGENTS.md: with the user's .rules there, our region goes in it (an
    AGENTS.md of ours would not load); with only an AGENTS.md, in that; with neither, a .rules of ours."""
    shop, blog = projects(tmp_path)
    (shop / ".rules").write_text("# Shop\n", encoding="utf-8")
    (shop / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    (blog / "AGENTS.md").write_text("# Blog\n", encoding="utf-8")
    persona(config, "targets", "add", "zed", "--project", str(shop))
    persona(config, "targets", "add", "zed", "--project", str(blog), "--name", "zed-blog")
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "render")
    assert FACT in (shop / ".rules").read_text(encoding="utf-8")
    assert (shop / "AGENTS.md").read_text(encoding="utf-8") == "# Agents\n"
    assert FACT in (blog / "AGENTS.md").read_text(encoding="utf-8") and not (blog / ".rules").exists()
    assert check(config, shop)["zed"]["loaded"] == [str(shop / ".rules")]
    assert check(config, blog)["zed"]["loaded"] == [str(blog / "AGENTS.md")]


def test_a_rules_file_the_user_adds_later_hides_ours_from_zed_and_targets_check_says_so(config: Path,
                                                                                       tmp_path: Path) -> None:
    shop, blog = projects(tmp_path)
    for project in (shop, blog):
        (project / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
        persona(config, "targets", "add", "zed", "--project", str(project), "--name", f"zed-{project.name}")
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "render")
    assert "zed-shop: kept" in persona(config, "targets", "check", "--project", str(shop))
    (shop / ".rules").write_text("# Mine now\n", encoding="utf-8")  # Zed reads it, and no longer AGENTS.md
    said = persona(config, "targets", "check", "--project", str(shop), code=1)
    assert f"zed-shop: not loaded: the host reads {shop / '.rules'} instead" in said
    assert "zed-blog: kept" in persona(config, "targets", "check", "--project", str(blog))  # the other project


def test_goose_shows_a_fact_with_jinja_as_written(config: Path, home: Path, tmp_path: Path) -> None:
    """Goose renders .goosehints as a template (minijinja, Jinja's syntax): rendered with jinja2 as Goose does,
    our file gives each fact back as written, and the user's own text too."""
    shop, _ = projects(tmp_path)
    (shop / ".goosehints").write_text("Run the tests first.\n", encoding="utf-8")
    facts = ["Says {{ name }} and {% raw %} aloud", "Writes {# a note #} in templates", "Closes }} and %} too"]
    persona(config, "targets", "add", "goose", "--project", str(shop))
    persona(config, "targets", "add", "goose", "--user", "--name", "goose-user")
    for index, fact in enumerate(facts):
        persona(config, "add", fact, "--topic", f"t{index}", *(["--project", str(shop)] if index else []))
    persona(config, "render")
    # the first fact is the user's everywhere (the user-level file), the others the shop's (its own file)
    for path, shown_there in ((home / ".config" / "goose" / ".goosehints", facts[:1]),
                              (shop / ".goosehints", ["Run the tests first.", *facts[1:]])):
        written = path.read_text(encoding="utf-8")
        assert not any(fact in written for fact in facts)  # escaped: Goose would fill in, run or drop them
        shown = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(written).render()
        assert all(text in shown for text in shown_there), shown


@pytest.mark.parametrize("host", ["zed", "goose", "amp", "opencode"])
def test_a_tracked_file_is_never_changed_without_shared(config: Path, tmp_path: Path, host: str) -> None:
    """Point 4's rule: in a checkout that tracks the host's file, `targets add` refuses (these hosts have no
    untracked place), naming --shared and --user; an untracked file of ours is listed in .git/info/exclude."""
    shop, blog = projects(tmp_path)
    own = FILES[host][1]
    for project in (shop, blog):
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    (shop / own).write_text("# Team rules\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(shop), "add", own], check=True)
    said = persona(config, "targets", "add", host, "--project", str(shop), code=1)
    assert "is tracked by git" in said and "--shared" in said and f"persona targets add {host} --user" in said
    persona(config, "targets", "add", host, "--project", str(blog))
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "render")
    assert FACT in (blog / own).read_text(encoding="utf-8")
    assert own in (blog / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    status = subprocess.run(["git", "-C", str(blog), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def test_kilo_rules_file_is_ours_and_left_out_of_git(config: Path, tmp_path: Path) -> None:
    shop, blog = projects(tmp_path)
    subprocess.run(["git", "init", "-q", str(shop)], check=True)
    for project in (shop, blog):
        persona(config, "targets", "add", "kilo", "--project", str(project), "--name", f"kilo-{project.name}")
    persona(config, "add", FACT, "--topic", "git")
    persona(config, "render")
    assert FACT in (shop / ".kilocode" / "rules" / "persona.md").read_text(encoding="utf-8")
    assert ".kilocode/rules/persona.md" in (shop / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert subprocess.run(["git", "-C", str(shop), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
    assert check(config, blog)["kilo"]["loaded"] == [str(blog / ".kilocode" / "rules" / "persona.md")]


def test_forget_names_opencodes_own_database_and_leaves_it_as_it_is(config: Path, home: Path) -> None:
    """OpenCode keeps its sessions in SQLite (~/.local/share/opencode/opencode.db): `persona forget` says the
    text is still there and why, and never rewrites it."""
    database = home / ".local" / "share" / "opencode" / "opencode.db"
    database.parent.mkdir(parents=True)
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE part (id TEXT, data TEXT)")
        conn.execute("INSERT INTO part VALUES ('1', ?)", (json.dumps({"text": FACT}),))
    conn.close()
    before = database.read_bytes()
    persona(config, "add", FACT, "--topic", "git")
    said = persona(config, "forget", "1", code=1)
    assert f"{database} (OpenCode) still holds the text: OpenCode's own SQLite store" in said
    assert database.read_bytes() == before
