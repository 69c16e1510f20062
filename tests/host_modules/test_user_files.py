"""The Copilot CLI's user file and Roo Code's rules folders: `targets add` writes where each host reads, and a
fact reaches the user's file and a project's, each only its own (two projects)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()


def invoke(config: Path, *args: str) -> str:
    done = runner.invoke(app, ["-c", str(config), *args])
    assert done.exit_code == 0, done.output
    return done.stdout


def test_copilot_user_writes_a_region_of_the_copilot_clis_own_file(tmp_path: Path) -> None:
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\n", encoding="utf-8")
    own = Path.home() / ".copilot" / "copilot-instructions.md"
    own.parent.mkdir()
    own.write_text("# Mine\n\nAlways explain a command before running it.\n", encoding="utf-8")
    said = invoke(config, "targets", "add", "copilot", "--user")
    assert f"writing a region of {own}" in said
    invoke(config, "add", "Answers tersely.", "--topic", "style")
    text = own.read_text(encoding="utf-8")
    assert text.startswith("# Mine\n\nAlways explain a command before running it.\n")
    assert "- Answers tersely." in text and "persona-tier:begin" in text


def test_roo_writes_its_rules_folders_for_the_user_and_each_project(tmp_path: Path) -> None:
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\n", encoding="utf-8")
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for project in (alpha, beta):
        project.mkdir()
        invoke(config, "targets", "add", "roo", "--project", str(project))
    invoke(config, "targets", "add", "roo", "--user")
    invoke(config, "add", "Answers tersely.", "--topic", "style")
    invoke(config, "add", "Ships alpha on Thursdays.", "--topic", "release", "--project", str(alpha))
    user = (Path.home() / ".roo" / "rules" / "persona.md").read_text(encoding="utf-8")
    assert "- Answers tersely." in user and "Thursdays" not in user
    assert "Ships alpha on Thursdays." in (alpha / ".roo" / "rules" / "persona.md").read_text(encoding="utf-8")
    assert "Thursdays" not in (beta / ".roo" / "rules" / "persona.md").read_text(encoding="utf-8")
