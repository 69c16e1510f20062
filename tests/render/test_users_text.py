"""A region never repeats the user's lines (issue 38, 8): a fact the user's own text in the same file already holds
(in normal form: case, whitespace, final punctuation, Unicode NFKC) is left out of that file's region, the budget
counts only what the region holds, and `persona explain` says "already in your own text"."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write

runner = CliRunner()
CLAUDE_MD = """# Project rules

## Git

- Never force-push; ask first.
- Testing:
  - use pytest
  - run make test

## Style

- Answers tersely.

```sh
- not an item: a line of a code block
```
"""
ALREADY = "already in your own text"


def configured(tmp_path: Path, budget: int = 1500) -> Path:
    config = {"store": {"path": str(tmp_path / "m.db")}, "injection": {"target": "claude"},
              "targets": {"markdown": None, "claude": {"template": "persona.md.j2", "output": "region",
                                                       "path": str(tmp_path / "CLAUDE.md"), "budget": budget}}}
    return write(tmp_path / "persona.yaml", json.dumps(config))


def persona(config: Path, *args: str):
    result = runner.invoke(app, ["-c", str(config), *args])
    assert result.exit_code == 0, result.output
    return result


def region(path: Path) -> str:
    text = path.read_text()
    return text[text.index("<!-- persona-tier:begin"):]


def fates(config: Path) -> dict[str, str]:
    [report] = json.loads(persona(config, "explain", "--json").stdout)
    return {fact["content"]: fact["fate"] for fact in report["facts"]}


def test_after_adopting_a_claude_md_its_items_are_not_repeated_in_our_region_and_explain_says_why(tmp_path):
    claude = write(tmp_path / "CLAUDE.md", CLAUDE_MD)
    config = configured(tmp_path)
    persona(config, "add", "Uses uv, never pip.", "--topic", "tools")
    adopted = persona(config, "adopt", str(claude))
    assert "3 added" in adopted.stdout
    assert claude.read_text().startswith(CLAUDE_MD), "the user's text stays as it was"
    ours = region(claude)
    assert "Uses uv, never pip." in ours
    for item in ("force-push", "pytest", "tersely"):
        assert item not in ours, item
    assert fates(config) == {"Uses uv, never pip.": "kept", "Never force-push; ask first.": ALREADY,
                             "Testing: use pytest; run make test": ALREADY, "Answers tersely.": ALREADY}
    explained = persona(config, "explain").stdout
    assert f"{ALREADY} (3)" in explained and "1 fact kept, 3 left out" in explained


def test_the_same_text_in_another_case_spacing_form_or_final_punctuation_is_held_but_a_longer_line_is_not(tmp_path):
    claude = write(tmp_path / "CLAUDE.md",
                   "## Tools\n\n- USES   ｕｖ, never pip!\n- Prefer small commits, always rebased\n")
    config = configured(tmp_path)
    persona(config, "add", "uses uv, never pip.", "--topic", "tools")
    persona(config, "add", "Prefer small commits", "--topic", "git")
    ours = region(claude)
    assert "uses uv" not in ours and "- Prefer small commits\n" in ours
    assert fates(config) == {"uses uv, never pip.": ALREADY, "Prefer small commits": "kept"}


def test_the_budget_counts_only_what_the_region_holds(tmp_path):
    claude = write(tmp_path / "CLAUDE.md", "".join(f"- The user's own rule number {n}.\n" for n in range(8)))
    config = configured(tmp_path, budget=40)
    for n in range(8):
        persona(config, "add", f"The user's own rule number {n}.", "--topic", "mine")
    persona(config, "add", "Answers in one line.", "--topic", "style")
    [report] = json.loads(persona(config, "render", "--json").stdout)
    assert report["fitted_out"] == 0 and report["sections_dropped"] == 0, "the held facts cost no budget"
    assert "Answers in one line." in region(claude) and "rule number" not in region(claude)
    assert set(fates(config).values()) == {"kept", ALREADY}


def test_a_line_the_user_removes_comes_back_into_our_region_at_the_next_render(tmp_path):
    claude = write(tmp_path / "CLAUDE.md", "- Answers tersely.\n")
    config = configured(tmp_path)
    persona(config, "add", "Answers tersely.", "--topic", "style")
    assert "tersely" not in region(claude)
    claude.write_text(claude.read_text().replace("- Answers tersely.\n", ""))
    persona(config, "render")
    assert "- Answers tersely." in region(claude)
