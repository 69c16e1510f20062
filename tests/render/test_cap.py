"""The shared cap: examples for each rule, and properties over arbitrary persona text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import cap_text, get_counter
from pipeline.render.section_cap import split_sections
from pipeline.render.tokens import HeuristicCounter

from ..conftest import REPO

O200K = get_counter("o200k_base")
NOTE = "_(truncated)_"


def cap(text: str, budget: int, counter=O200K, note: str = NOTE):
    return cap_text(text, budget=budget, counter=counter, boundary="## ", note=note)


def section(topic: str, *items: str) -> str:
    return f"## {topic}\n\n" + "".join(f"- {item}\n" for item in items) + "\n"


def test_text_within_budget_is_returned_unchanged():
    text = section("a", "one", "two")
    result = cap(text, 1000)
    assert result.text == text and result.sections_dropped == 0


def test_budget_zero_or_less_gives_an_empty_block_without_a_note():
    for budget in (0, -5):
        result = cap(section("a", "x"), budget)
        assert result.text == "" and result.tokens == 0


def test_a_section_that_does_not_fit_is_skipped_and_smaller_ones_still_kept():
    big = section("big", *["a long fact about many things " * 5] * 20)
    small_a, small_b = section("a", "short"), section("b", "also short")
    result = cap(small_a + big + small_b, 60)
    assert result.text == small_a + small_b + NOTE + "\n"
    assert (result.sections_kept, result.sections_dropped) == (2, 1)
    assert result.tokens <= 60


def test_the_note_counts_inside_the_budget():
    sections = [section(f"t{i}", f"fact number {i}") for i in range(30)]
    text = "".join(sections)
    for budget in range(10, O200K.count(text)):
        result = cap(text, budget)
        assert O200K.count(result.text) == result.tokens <= budget


def test_newlines_are_preserved_exactly():
    text = "intro line\n\n" + section("a", "x", "y") + section("b", "z" * 400)
    result = cap(text, 20)
    assert result.text.startswith("intro line\n\n## a\n\n- x\n- y\n\n")


def test_when_no_section_fits_the_top_sections_leading_items_are_kept():
    text = section("huge", *[f"fact {i} " + "word " * 10 for i in range(200)])
    result = cap(text, 100)
    assert result.partial and result.text.startswith("## huge\n\n- fact 0 ")
    assert result.text.endswith(NOTE + "\n")
    assert result.tokens <= 100
    body = result.text.removesuffix(NOTE + "\n")
    assert all(line in text.splitlines() for line in body.splitlines())


def test_a_file_without_headings_keeps_its_leading_lines():
    text = "".join(f"line {i} with some words\n" for i in range(500))
    result = cap(text, 50)
    assert result.text and result.tokens <= 50
    assert text.startswith(result.text.removesuffix(NOTE + "\n").rstrip("\n"))


def test_cjk_text_is_capped():
    text = section("中文", *["这是一个很长的中文句子，用来测试令牌上限。" * 30] * 30)
    for counter in (O200K, HeuristicCounter()):
        result = cap(text, 200, counter=counter)
        assert 0 < O200K.count(result.text) <= 200 or counter is not O200K
        assert counter.count(result.text) <= 200


def test_heuristic_counts_cjk_per_character_and_over_counts():
    heuristic = HeuristicCounter()
    assert heuristic.count("你好世界") == 4
    for text in ["Answers tersely.", "👨‍👩‍👧‍👦 family", "## heading\n- item\n", "naïve café", "x" * 1000]:
        assert heuristic.count(text) >= O200K.count(text)


def test_split_is_lossless():
    text = "pre\n## a\nx\n## b\ny"
    split = split_sections(text, "## ")
    assert split.preamble + "".join(split.sections) == text
    assert split.sections == ("## a\nx\n", "## b\ny")


@settings(max_examples=500, deadline=None)
@given(text=st.lists(st.sampled_from(["## ", "#", "\n", "\r", "\r\n", "\x0b", "\x85", "\u2028", "a", " "]),
                     max_size=30).map("".join),
       boundary=st.sampled_from(["## ", "#", "a", " "]))
def test_a_section_starts_exactly_where_a_line_starts_with_the_boundary(text, boundary):
    # Every line end str.splitlines knows ends a line here too, "\r\n" once.
    split = split_sections(text, boundary)
    lines = text.splitlines(keepends=True)
    assert split.preamble + "".join(split.sections) == text
    assert len(split.sections) == sum(line.startswith(boundary) for line in lines)
    assert all(s.startswith(boundary) for s in split.sections)


# -- properties -------------------------------------------------------------------

fact_text = st.one_of(
    st.text(min_size=1, max_size=80),
    st.sampled_from(["你好世界，这是测试。" * 5, "🎉🚀👨‍👩‍👧‍👦" * 3, "## injected", "# title", "<x>&</x>", "a" * 2000]),
)
topics = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.lists(fact_text, min_size=1, max_size=6)),
                  min_size=1, max_size=8)


def build(persona: list[tuple[str, list[str]]]) -> tuple[str, list[str]]:
    from pipeline.render.sanitize import inline

    sections = [
        f"## {inline(topic) or 'general'}\n\n" + "".join(f"- {inline(f)}\n" for f in facts) + "\n"
        for topic, facts in persona
    ]
    return "".join(sections), sections


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(persona=topics, budget=st.integers(min_value=-5, max_value=400))
def test_cap_properties(persona, budget):
    text, sections = build(persona)
    result = cap(text, budget)
    # never over budget, by the exact counter
    assert O200K.count(result.text) <= max(budget, 0)
    # same input, same bytes
    assert cap(text, budget).text == result.text
    body = result.text.removesuffix(NOTE + "\n")
    if result.partial:
        # the fallback: leading whole lines of the top section (plus the blank line before the note)
        kept = body.rstrip("\n")
        assert sections[0].startswith(kept) and sections[0][len(kept)] == "\n"  # cut only at a line end
    else:
        # whole sections only, as a subsequence of the original order
        kept = list(split_sections(body, "## ").sections)
        assert len(kept) == result.sections_kept
        remaining = iter(sections)
        assert all(any(candidate == s for candidate in remaining) for s in kept)


@settings(max_examples=60, deadline=None)
@given(persona=topics)
def test_everything_fits_means_nothing_changes(persona):
    text, _ = build(persona)
    assert cap(text, O200K.count(text)).text == text


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "heuristic"])
def test_every_counter_is_selectable(name):
    assert get_counter(name).count("Answers tersely.") > 0


def test_long_text_that_fits_exactly_is_kept_whole():
    # Few tokens for many characters: the per-section path must still see that everything fits.
    text = section("a", "a" * 5000)
    assert cap(text, O200K.count(text)).text == text


FALLBACK_SCRIPT = """
import logging, sys
sys.modules["toktok"] = None  # as if the wheel were missing on this platform
logging.basicConfig(level=logging.WARNING, format="%(message)s")
from pipeline import get_counter
counter = get_counter("o200k_base")
print(counter.name, counter.count("你好世界"))
"""


def test_a_tokenizer_that_cannot_load_falls_back_to_the_heuristic_with_a_warning():
    import os
    import subprocess
    import sys

    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", FALLBACK_SCRIPT], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.stdout.split() == ["heuristic", "4"]
    assert "token counter o200k_base could not load" in done.stderr and "heuristic" in done.stderr
