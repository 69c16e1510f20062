"""`persona init` offers the hosts whose modules say offered_by_init, and no other host with a user-level file."""

from __future__ import annotations

import os
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.hosts import registry

runner = CliRunner()


def test_init_offers_exactly_the_hosts_that_declare_it(tmp_path):
    home = Path(os.environ["HOME"])
    every_user_file = {name: preset.user_file for name, preset in registry.presets().items() if preset.user_file}
    for file in every_user_file.values():
        (home / file).parent.mkdir(parents=True, exist_ok=True)
    done = runner.invoke(app, ["--set", f"store.path={tmp_path / 'm.db'}", "init", "--dry-run"])
    assert done.exit_code == 0, done.output
    offered = {name for name in every_user_file if f"add target {name!r}" in done.stdout}
    assert offered == set(registry.offered_by_init())
    assert offered < set(every_user_file)  # windsurf, cline, continue, kiro have one too: `targets add --user`
