"""A region that reads well beside the user's text (#49 point 5): one line saying these are facts about the user,
our sections at the heading level the user's sections use (never above the user's title), no heading that
repeats one of the user's, and the budget still exact with the cap cutting at our (moved) section headings.

Two projects with two different heading layouts, rendered in one run and again after the user edits a heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.render.region_layout import DISTINCT, INTRO
from pipeline.render.tokens import get_counter

from .persona_cli import persona, write_config

# A `#` title with `##` sections, one of them a topic of ours.
SHOP = "# The shop\n\nA small web shop.\n\n## Git\n\nRebase, never merge.\n\n## Deploy\n\nOn Thursdays.\n"
# A `##` title with `###` sections (and a fenced `## Editor` that is code, not a heading of the user's).
BLOG = "## The blog\n\n### Editor\n\nMarkdown only.\n\n```\n## git\n```\n\n### Deploy\n\nBy hand.\n"
FACTS = {"git": "Never force-pushes.", "editor": "Uses Helix.", "style": "Answers tersely.",
         "release": "Ships before noon."}
HEADING = re.compile(r"^(#{1,6}) (.*)$", re.MULTILINE)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path)


def projects(config: Path, tmp_path: Path) -> tuple[Path, Path]:
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    for root, text in ((shop, SHOP), (blog, BLOG)):
        root.mkdir()
        (root / "AGENTS.md").write_text(text, encoding="utf-8")
        persona(config, "targets", "add", "codex", "--project", str(root))
    for topic, fact in FACTS.items():
        persona(config, "add", fact, "--topic", topic)
    return shop, blog


def region(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text[text.index("-->\n", text.index("persona-tier:begin")) + 4:text.index("<!-- persona-tier:end")]


def headings(text: str) -> list[tuple[int, str]]:
    return [(len(marks), title) for marks, title in HEADING.findall(text)]


def test_each_region_says_whose_facts_nests_at_the_users_levels_and_repeats_no_heading(config, tmp_path):
    shop, blog = projects(config, tmp_path)
    persona(config, "render")
    ours = region(shop / "AGENTS.md")
    assert ours.startswith(INTRO + "\n\n") and ours.count(INTRO) == 1
    assert sorted(headings(ours)) == [(2, "editor"), (2, f"git{DISTINCT}"), (2, "release"), (2, "style")]
    theirs = region(blog / "AGENTS.md")
    assert theirs.startswith(INTRO + "\n\n")
    # Under the `## The blog` title, beside the user's `###` sections; the fenced `## git` is not the user's heading.
    assert sorted(headings(theirs)) == [(3, f"editor{DISTINCT}"), (3, "git"), (3, "release"), (3, "style")]
    for root in (shop, blog):
        text = (root / "AGENTS.md").read_text(encoding="utf-8").replace("```\n## git\n```", "")
        titles = [title.casefold() for _, title in headings(text)]
        assert len(titles) == len(set(titles)), titles
        assert "each fact once" in persona(config, "targets", "check")
    assert (shop / "AGENTS.md").read_text(encoding="utf-8").startswith("# The shop\n\n<!-- persona-tier:begin")


def test_a_heading_the_user_renames_is_ours_again_at_the_next_render(config, tmp_path):
    shop, blog = projects(config, tmp_path)
    persona(config, "render")
    agents = shop / "AGENTS.md"
    agents.write_text(agents.read_text(encoding="utf-8").replace("## Git\n", "### Version control\n"),
                      encoding="utf-8")
    persona(config, "render")
    assert (2, "git") in headings(region(agents)) and (3, f"editor{DISTINCT}") in headings(region(blog / "AGENTS.md"))


def test_a_file_without_headings_gets_the_templates_level_and_a_file_of_setext_h1_sections_its_own(config, tmp_path):
    plain, flat = tmp_path / "plain", tmp_path / "flat"
    for root, text in ((plain, "Just prose.\n"), (flat, "Git\n===\n\nx\n\nDeploy\n======\n\n- y\n---\n")):
        root.mkdir()
        (root / "AGENTS.md").write_text(text, encoding="utf-8")
        persona(config, "targets", "add", "codex", "--project", str(root))
    persona(config, "add", FACTS["git"], "--topic", "git")
    persona(config, "render")
    assert headings(region(plain / "AGENTS.md")) == [(2, "git")]
    assert headings(region(flat / "AGENTS.md")) == [(1, f"git{DISTINCT}")]


@pytest.mark.parametrize("budget", [60, 90])
def test_the_cap_cuts_at_the_moved_headings_and_the_budget_holds_exactly(config, tmp_path, budget):
    shop, blog = projects(config, tmp_path)
    for topic in ("alpha", "beta", "gamma"):
        persona(config, "add", f"Prefers {topic} in every project, whatever the language.", "--topic", topic)
    said = persona(config, "--set", f"targets.codex.budget={budget}", "--set", f"targets.codex-blog.budget={budget}",
                   "render")
    lines = [line for line in said.splitlines() if line.startswith("codex")]
    assert len(lines) == 2 and all(" 0 dropped" not in line for line in lines)
    counter = get_counter("o200k_base")
    for root, level in ((shop, 2), (blog, 3)):
        body = region(root / "AGENTS.md")
        assert counter.count(body) <= budget
        assert body.startswith(INTRO) and "left out" in body
        kept = headings(body)
        assert kept and all(found == level for found, _ in kept)
        for _, title in kept:  # each kept section whole: its heading and its one fact
            assert re.search(rf"^{'#' * level} {re.escape(title)}\n\n- .+\n", body, re.MULTILINE)
