"""What the targets' tests share: a config file naming a store and an injection file in ``tmp_path`` (each
module's ``config`` fixture), and the CLI run as the user runs it, with its exit code checked."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

runner = CliRunner()


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "persona.yaml"
    path.write_text(f"store:\n  path: {tmp_path / 'm.db'}\ninjection:\n  file: {tmp_path / 'persona.md'}\n",
                    encoding="utf-8")
    return path


def persona(config: Path | None, *args: str, code: int = 0) -> str:
    """``persona -c CONFIG ARGS`` (no ``-c`` for None), asserting its exit code; its output and errors."""
    result = runner.invoke(app, [*(["-c", str(config)] if config else []), *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result.stdout + result.stderr
