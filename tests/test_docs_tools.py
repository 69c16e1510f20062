"""The docs count the tools right: every "N `persona_*` tools" in the README and the guides says as many as the
registry holds, and docs/tools.md has a row for each of them and for no other (the count is the code's, not ours)."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline import load_settings
from pipeline.integrations.tools import PersonaTools

from .conftest import REPO

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
# "twelve `persona_*` tools", "the twelve [tools](tools.md) as `persona_*`", "12 persona_* tools"
COUNTED = re.compile(r"\b(?P<n>\d+|" + "|".join(WORDS) + r")\s+(?:`persona_\*`\s+tools|\[tools\]\(tools\.md\)"
                     r"\s+as\s+`persona_\*`|persona_\*\s+tools)", re.IGNORECASE)


def tool_names(tmp_path: Path) -> list[str]:
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db")})
    return list(PersonaTools(lambda: settings).catalog(legacy=False))


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if "reference" not in p.parts)]


def test_every_page_that_counts_the_tools_counts_the_registry(tmp_path: Path) -> None:
    count = len(tool_names(tmp_path))
    found = [(page.name, match.group(0), match.group("n")) for page in pages()
             for match in COUNTED.finditer(page.read_text(encoding="utf-8"))]
    assert found, "no page counts the tools: this test no longer reads the sentence it guards"
    wrong = [(page, said) for page, said, n in found
             if (int(n) if n.isdigit() else WORDS.index(n.lower())) != count]
    assert not wrong, f"the registry has {count} persona_* tools ({WORDS[count]}); these pages say otherwise: {wrong}"


def test_the_tools_page_has_one_row_per_registered_tool(tmp_path: Path) -> None:
    rows = re.findall(r"^\| `(persona_\w+)` \|", (REPO / "docs" / "tools.md").read_text(encoding="utf-8"), re.M)
    assert sorted(rows) == sorted(tool_names(tmp_path))
