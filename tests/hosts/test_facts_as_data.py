"""A fact is data to the real hosts' loaders (#49): a fact holding `@path`, `@missing`, `@~/path`, `{{ }}`,
`<!-- -->` or a leading `# ` reaches the model with no file spliced in and no "Import failed" naming a path, in
Claude Code 2.1.332 and Gemini CLI 0.61.0 (whose loaders import `@path`: our render writes `\\@`, CommonMark's
escape, which neither imports) and Codex 0.171.0 (which imports nothing: the fact goes as written).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .facts import main_request, write_own
from .fake_model import FakeModel
from .hosts import CLAUDE, CODEX, GEMINI, Host, persona, run_claude, run_codex, run_gemini

pytestmark = [pytest.mark.slow]
FACTS = {
    "notes": "Reads @notes/todo.md first",
    "missing": "Checks @missing/plan.md daily",
    "home": "Keeps @~/secret.md near",
    "jinja": "Says {{ name }} and {% raw %} aloud",
    "comment": "<!-- keep this --> is a fact too",
    "heading": "# Not a heading, a fact",
}
RUN = {CLAUDE: run_claude, GEMINI: run_gemini, CODEX: run_codex}
ESCAPED = {CLAUDE, GEMINI}  # the hosts whose loaders import `@path`


@pytest.mark.parametrize("host", [CLAUDE, GEMINI, CODEX], ids=str, indirect=True)
def test_a_fact_reaches_the_model_as_data_and_splices_no_file(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    write_own(project / "notes" / "todo.md", "SECRET-PROJECT-NOTES\n")
    write_own(home / "secret.md", "SECRET-HOME-FILE\n")
    persona(home, "targets", "add", host.name, "--project", str(project))
    for topic, fact in FACTS.items():
        persona(home, "add", fact, "--topic", topic)
    persona(home, "render")
    text = main_request(RUN[host](model, project, home, "hello")).text
    assert "SECRET-" not in text and "Import failed" not in text
    for fact in FACTS.values():
        shown = fact.replace("@", "\\@") if host in ESCAPED else fact
        shown = "\\" + shown if shown.startswith("#") else shown  # never a heading, for every host
        assert text.count(shown.replace("\\", "\\\\")) + text.count(shown) >= 1, (fact, host)
