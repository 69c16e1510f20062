"""The page's Proposals look over the stored persona (issue 50): facts no single write judged (another tool's, an
old import's) are proposed there, as `persona review --scan` does, once; another profile's facts stay its own. A
real `persona ui` process."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from pipeline import PersonaStore

from .running import config_file, start

pytestmark = pytest.mark.slow


def test_the_proposals_page_proposes_what_no_single_write_saw_once(tmp_path: Path) -> None:
    overrides = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}
    for profile in ("default", "bob"):
        with PersonaStore(tmp_path / "m.db", profile=profile, supersede_detect="off") as quiet:
            quiet.add("Lives in Lisbon.", topic="home")
            quiet.add("Moved to Porto last month.", topic="home")
    running = start(tmp_path, config_file(tmp_path, overrides))
    try:
        cookie = running.login()
        page = html.unescape(running.get("/proposals", cookie).body)
        assert "Lives in Lisbon." in page and "Moved to Porto last month." in page
        running.get("/proposals", cookie)
    finally:
        assert running.stop() == 0
    with PersonaStore(tmp_path / "m.db") as mine, PersonaStore(tmp_path / "m.db", profile="bob") as bob:
        assert [(proposal.kind, proposal.old.content) for proposal in mine.proposals()] == \
            [("update", "Lives in Lisbon.")]
        assert bob.proposals() == []
