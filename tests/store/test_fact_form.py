"""The one sense in which two texts state the same fact (issue 48 point 5): :func:`pipeline.text.fact_form`, which
the render's dedupe and the forget check share. Quotes, emphasis, brackets, a bullet, an emoji and the punctuation
between words are dress; other words, other digits and the marks that make a word (C++, 3.11) are another fact."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.text import fact_form

runner = CliRunner()
FACT = "Uses uv, never pip"
# Each dress a forgotten text may come back in: "{}" is the text.
DRESSES = {
    "double quotes": '"{}"', "curly quotes": "\u201c{}\u201d", "single quotes": "'{}'", "guillemets": "\u00ab{}\u00bb",
    "underscores": "_{}_", "double underscores": "__{}__", "stars": "*{}*", "bold": "**{}**", "code": "`{}`",
    "strike": "~~{}~~", "brackets": "({})", "square brackets": "[{}]", "a dash bullet": "- {}",
    "a star bullet": "* {}", "a dot bullet": "\u2022 {}", "a numbered bullet": "1. {}", "a quote mark": "> {}",
    "a heading": "## {}", "an emoji after": "{} \U0001f680", "an emoji before": "\u2705 {}",
    "an emoji with a variation selector": "\u2764\ufe0f {}", "a full stop": "{}.",
    "all at once": '- **"{}"** \U0001f680', "a numbered bullet in emphasis": "_1. {}_",
}
INNER = ["Uses uv; never pip", "Uses uv \u2014 never pip!", "Uses uv: never, pip", "Uses uv / never pip",
         "Uses: uv, never... pip"]
# Pairs the dedupe and the forget check must keep apart: each differs in meaning.
APART = [("Uses C++", "Uses C"), ("Uses C#", "Uses C"), ("Uses C++", "Uses C#"), ("Python 3.11", "Python 311"),
         ("Python 3.11", "Python 3 11"), ("Uses uv, never pip", "Uses pip, never uv"),
         ("Door code 4721", "Door code 4722"), ("Meets at 10:30", "Meets at 1030"),
         ("Names in snake_case", "Names in snakecase"),
         ("Can't push", "Cant push"), ("Uses uv", "Uses UV2"), ("Write हिंदी", "Write हद")]


@pytest.mark.parametrize("dress", DRESSES.values(), ids=list(DRESSES))
def test_a_fact_in_any_dress_has_its_fact_form(dress):
    assert fact_form(dress.format(FACT)) == fact_form(FACT) == "uses uv never pip"


@pytest.mark.parametrize("text", INNER)
def test_the_punctuation_between_words_is_dress_too(text):
    assert fact_form(text) == fact_form(FACT)


@pytest.mark.parametrize(("one", "other"), APART)
def test_a_fact_that_differs_in_meaning_has_another_fact_form(one, other):
    assert fact_form(one) != fact_form(other)


def test_the_marks_that_make_a_word_stay_in_any_dress():
    assert {fact_form(dress.format("Uses C++")) for dress in DRESSES.values()} == {"uses c++"}
    assert fact_form("**Python 3.11**, 1,000 runs at 10:30 (snake_case)") == \
        "python 3.11 1,000 runs at 10:30 snake_case"
    assert fact_form("\U0001f680 \u2728") == ""  # no words at all


# -- the property: any words in any dress have their fact form ------------------------------------------------

WORDS = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz\u00e9\u00fc\u00df0123456789", min_size=1, max_size=8),
                 min_size=1, max_size=6)


@given(words=WORDS, dresses=st.lists(st.sampled_from(list(DRESSES.values())), max_size=3),
       joints=st.lists(st.sampled_from([" ", ", ", "; ", " - ", " / ", ": "]), min_size=6, max_size=6))
def test_any_dress_of_any_words_has_their_fact_form(words, dresses, joints):
    text = "".join(itertools.chain.from_iterable(zip(words, joints, strict=False))).strip(" ,;:/-")
    dressed = text
    for dress in dresses:
        dressed = dress.format(dressed)
    assert fact_form(dressed) == fact_form(" ".join(words))


# -- the render's dedupe is the same sense ----------------------------------------------------------------------

def test_the_render_shows_one_of_two_dresses_of_a_fact_and_both_of_two_facts(tmp_path):
    target = tmp_path / "persona-{profile}.md"
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={target}"]
    for profile in ("alice", "bob"):
        for text in ("Uses uv, never pip.", "_Uses uv; never pip_", "Uses C++ at work", "Uses C# at work"):
            assert runner.invoke(app, [*base, "add", text, "--topic", "tools", "-p", profile]).exit_code == 0
    for profile in ("alice", "bob"):
        shown = (tmp_path / f"persona-{profile}.md").read_text()
        assert shown.count("Uses uv, never pip.") + shown.count("_Uses uv; never pip_") == 1, shown
        assert "Uses C++ at work" in shown and "Uses C# at work" in shown
