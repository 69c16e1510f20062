"""The real Gemini CLI (`gemini -p`) reads what our presets give it: once, beside the user's own text.

Everything is checked in the requests the fake model received. Gemini CLI 0.61.0 first asks a small model
which model should answer (`:generateContent`, with the project's GEMINI.md), then sends the turn itself
(`:streamGenerateContent`): ~/.gemini/GEMINI.md in the system instruction, the project's GEMINI.md in the
first user message, each quoted as it is on disk, our region's markers included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .facts import (
    FACTS,
    OWN_PROJECT,
    OWN_USER,
    add_facts,
    add_scoped_facts,
    assert_intact,
    assert_scoped_facts,
    main_request,
    user_and_project_regions,
    write_own,
)
from .fake_model import FakeModel
from .hosts import GEMINI, Host, persona, run_gemini

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("host", [GEMINI], ids=str, indirect=True)]


def own_files(home: Path, project: Path) -> tuple[Path, Path]:
    return write_own(home / ".gemini" / "GEMINI.md", OWN_USER), write_own(project / "GEMINI.md", OWN_PROJECT)


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_region_reaches_gemini_cli_once_beside_the_users_own_text(
        host: Host, scope: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    user_file, project_file = own_files(home, project)
    persona(home, "targets", "add", "gemini", *([scope] if scope == "--user" else [scope, str(project)]))
    add_facts(home)
    add_scoped_facts(home, "gemini", project, tmp_path / "elsewhere")
    persona(home, "render")
    requests = run_gemini(model, project, home, "hello")
    request = main_request(requests)
    assert "streamGenerateContent" in request.path, [r.path for r in requests]
    assert_scoped_facts(request, project=scope == "--project")  # a user-level file: no project's facts
    assert_intact(request, OWN_USER, OWN_PROJECT, user_file.read_text(), project_file.read_text())
    where = request.body["systemInstruction"] if scope == "--user" else request.body["contents"][0]
    assert all(fact in str(where) for fact in FACTS.values())


def test_with_a_user_and_a_project_region_gemini_cli_gets_each_fact_of_its_scopes_once(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """Both presets at once (the user-level file and the project's): the host reads each fact of its scopes
    once."""
    own_files(home, project)
    user_and_project_regions(home, "gemini", project, tmp_path / "elsewhere")
    request = main_request(run_gemini(model, project, home, "hello"))
    assert_scoped_facts(request, project=True)
