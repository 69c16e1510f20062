"""`persona status` counts the writes awaiting the user's approval (issue 53): the agents' (writes.agents: ask) and
the learned facts' (learn.approve: ask), each profile its own. Through the CLI, both backends."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write


def cli(database, tmp_path: Path, *args: str):
    return CliRunner().invoke(app, ["--db", str(database.target), "--set",
                                    f"injection.file={tmp_path / 'p-{profile}.md'}", *args])


def test_status_counts_held_agent_writes_and_held_learned_facts_per_profile(database, tmp_path):
    write(Path(os.environ["HOME"]) / ".hermes" / "memories" / "USER.md", "Prefers metric units.\n§\nHas a dog.")
    for profile in ("alice", "bob"):
        added = cli(database, tmp_path, "add", f"{profile} answers tersely.", "--topic", "style", "-p", profile)
        assert added.exit_code == 0, added.output
    assert cli(database, tmp_path, "--set", "learn.approve=ask", "learn", "-p", "alice").exit_code == 0
    with database.store(profile="alice") as store:
        store.writer = "tool:claude-code"  # as the MCP server stamps an agent's write
        store.hold("add", content="Uses vim.", topic="tools")
    status = cli(database, tmp_path, "status", "-p", "alice")
    assert status.exit_code == 0, status.output
    assert "held for your approval (`persona review`): 1 agent write, 2 learned facts" in status.output
    assert "held for your approval" not in cli(database, tmp_path, "status", "-p", "bob").output
    data = json.loads(cli(database, tmp_path, "status", "-p", "alice", "--json").output)
    assert data["held"] == {"agents": 1, "learned": 2}
    assert cli(database, tmp_path, "review", "accept", "w1", "-p", "alice").exit_code == 0
    assert json.loads(cli(database, tmp_path, "status", "-p", "alice", "--json").output)["held"] == {
        "agents": 1, "learned": 1}
