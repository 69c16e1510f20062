"""`persona targets check`: what each target's host will load, and whether our bytes are in it whole.

Codex's chain is computed as Codex documents it (the global file, AGENTS.override.md shadowing AGENTS.md, one
file per directory from the git root down) and as tests/hosts/test_codex.py measured it in the real Codex
(32 KiB over the project's files, cut where the budget runs out).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

runner = CliRunner()
LINE = "- House rule {:05d}: keep the build green and every test fast.\n"


def house_rules(size: int) -> str:
    """A user's own AGENTS.md text of about ``size`` bytes, whole lines."""
    return "".join(LINE.format(index) for index in range(size // len(LINE.format(0))))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    with PersonaStore(tmp_path / "m.db") as store:
        store.add("Answers tersely.", topic="style")
    path = tmp_path / "persona.yaml"
    path.write_text(f"store:\n  path: {tmp_path / 'm.db'}\ninjection:\n  file: {tmp_path / 'persona.md'}\n",
                    encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def persona(config: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["-c", str(config), *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result.stdout


def checked(config: Path, code: int) -> dict[str, dict[str, object]]:
    return {c["target"]: c for c in json.loads(persona(config, "targets", "check", "--json", code=code))}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_codex_chain_that_fits_is_kept_and_listed_in_codexs_order(config, repo):
    user = write(Path.home() / ".codex" / "AGENTS.md", "My global rules.\n")
    root = write(repo / "AGENTS.md", house_rules(20_000))
    nested = write(repo / "service" / "AGENTS.md", "Service rules.\n")
    persona(config, "targets", "add", "codex", "--project", str(nested.parent))
    persona(config, "render")
    assert nested.read_text().startswith("<!-- persona-tier:begin")  # Codex cuts from the end: ours goes first
    codex = checked(config, 0)["codex"]
    assert codex["outcome"] == "kept" and not codex["cut"]
    assert codex["loaded"] == [str(user.resolve()), str(root.resolve()), str(nested.resolve())]
    total = root.stat().st_size + nested.stat().st_size  # the global file is outside project_doc_max_bytes
    assert codex["measures"] == [f"{total:,} of 32,768 bytes for the whole chain"]
    assert "codex: kept" in persona(config, "targets", "check")
    assert "codex: kept" in persona(config, "status")


def test_a_region_at_the_end_of_a_long_agents_md_is_cut_and_check_fails(config, repo):
    agents = write(repo / "AGENTS.md", house_rules(40_000))
    persona(config, "targets", "add", "codex", "--project", str(repo))
    persona(config, "--set", "targets.codex.region_at=end", "render")
    assert agents.read_text().rstrip().endswith("-->")
    result = runner.invoke(app, ["-c", str(config), "--set", "targets.codex.region_at=end", "targets", "check"])
    assert result.exit_code == 1
    assert "codex: cut after 0 bytes: move the region or shorten the files" in result.stdout
    assert "codex: cut after 0 bytes" in persona(config, "status")  # status says it too, and exits 0


def test_a_region_past_the_chains_budget_is_cut_after_what_is_left(config, repo):
    """The budget is the chain's: a 32,7xx-byte AGENTS.md at the git root leaves a few bytes of a nested file."""
    root = write(repo / "AGENTS.md", house_rules(32_700))
    nested = write(repo / "service" / "AGENTS.md", "Service rules.\n")
    persona(config, "targets", "add", "codex", "--project", str(nested.parent))
    persona(config, "render")
    left = 32 * 1024 - root.stat().st_size
    codex = checked(config, 1)["codex"]
    assert codex["outcome"] == f"cut after {left:,} bytes: move the region or shorten the files" and codex["cut"]


def test_a_global_override_file_shadows_the_users_agents_md(config):
    persona(config, "targets", "add", "codex", "--user")
    persona(config, "render")
    assert checked(config, 0)["codex"]["outcome"] == "kept"
    override = write(Path.home() / ".codex" / "AGENTS.override.md", "Just for today.\n")
    codex = checked(config, 1)["codex"]
    assert codex["outcome"] == f"not loaded: the host reads {override.resolve()} instead" and codex["cut"]
    override.write_text("")  # Codex skips an empty file: ours is read again
    assert checked(config, 0)["codex"]["outcome"] == "kept"


def test_a_project_override_file_shadows_the_projects_agents_md(config, repo):
    persona(config, "targets", "add", "codex", "--project", str(repo))
    persona(config, "render")
    override = write(repo / "AGENTS.override.md", "Override.\n")
    assert checked(config, 1)["codex"]["outcome"] == f"not loaded: the host reads {override.resolve()} instead"


def test_copilot_code_review_must_find_the_region_in_its_first_4000_characters(config, repo):
    instructions = write(repo / ".github" / "copilot-instructions.md", "é" * 3_999 + "\n")
    persona(config, "targets", "add", "copilot", "--shared", "--project", str(repo))
    persona(config, "render")
    copilot = checked(config, 1)["copilot"]
    size = len(instructions.read_text(encoding="utf-8"))
    assert copilot["measures"] == [f"{size:,} of 4,000 characters"]
    assert copilot["outcome"] == "cut after 0 characters: move the region or shorten the files"


def test_the_claude_code_hook_is_checked_where_it_is_installed(config, tmp_path):
    assert "claude-code hook" not in persona(config, "targets", "check")
    runner.invoke(app, ["hooks", "install", "claude-code"])
    hook = checked(config, 0)["claude-code hook"]
    assert hook["outcome"] == "kept" and hook["path"] == str(Path.home() / ".claude" / "settings.json")
    assert str(hook["measures"][0]).endswith("of 10,000 characters")  # type: ignore[index]


def test_a_target_not_rendered_yet_is_said_and_is_no_failure(config, repo):
    persona(config, "targets", "add", "gemini", "--project", str(repo))
    assert checked(config, 0)["gemini"]["outcome"] == "not written yet: run `persona render`"


def test_windsurf_rules_are_checked_per_file_and_with_the_global_rules_first(config, repo):
    """6,000 characters a rules file, 12,000 for the global and workspace rules together, global first."""
    write(Path.home() / ".codeium" / "windsurf" / "memories" / "global_rules.md", "g" * 5_500 + "\n")
    persona(config, "targets", "add", "windsurf", "--project", str(repo))
    persona(config, "render")
    ours = repo / ".windsurf" / "rules" / "persona.md"
    windsurf = checked(config, 0)["windsurf"]
    assert windsurf["outcome"] == "kept" and windsurf["loaded"][-1] == str(ours.resolve())  # type: ignore[index]
    write(repo / ".windsurf" / "rules" / "a-team.md", "t" * 6_480 + "\n")  # read before ours (by name)
    windsurf = checked(config, 1)["windsurf"]
    size = len(ours.read_text(encoding="utf-8"))
    assert windsurf["measures"] == [f"{size:,} of 6,000 characters",
                                    f"{5_501 + 6_481 + size:,} of 12,000 characters for the whole chain"]
    assert windsurf["outcome"] == f"cut after {12_000 - 11_982:,} characters: move the region or shorten the files"


def test_a_file_past_the_region_bound_is_said_and_not_read_past_it(config, repo):
    """`targets check` (and `status`, which runs it) read no more of a file than the region writer does: a file past
    render.max_region_file_bytes is reported as one that persona-tier neither reads nor writes, a cut."""
    agents = write(repo / "AGENTS.md", house_rules(20_000))
    persona(config, "targets", "add", "codex", "--project", str(repo))
    persona(config, "render")
    with agents.open("a", encoding="utf-8") as out:
        out.write(house_rules(5 * 1024 * 1024))  # past the 4 MiB default
    codex = checked(config, 1)["codex"]
    assert codex["cut"] and codex["outcome"].startswith("larger than 4,194,304 bytes: persona-tier neither reads")
    assert "codex: larger than 4,194,304 bytes" in persona(config, "status")
    raised = runner.invoke(app, ["-c", str(config), "--set", "render.max_region_file_bytes=8000000",
                                 "targets", "check", "--json"])
    assert json.loads(raised.stdout)[0]["outcome"] != codex["outcome"]  # the setting is the bound
