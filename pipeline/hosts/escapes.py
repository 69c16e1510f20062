"""A fact written so that a host's loader reads it as data: each syntax a host interprets (its module's
``interprets``: ``pipeline/hosts/model.py``) has one escape here, the one that host honours, and a render applies
its target's host's escapes to every fact and topic it shows.

Each escape is CommonMark's own backslash before an ASCII punctuation mark, so Markdown shows the text as written;
the host's loader no longer sees the syntax: seen in the real Claude Code 2.1.332 and Gemini CLI 0.61.0
(tests/hosts/test_facts_as_data.py). A code span would do for Claude Code, but Gemini CLI pairs backticks over a
whole file, so one stray backtick of the user's puts our span's `@path` outside code again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .model import Syntax

# `@` where a loader starts an import: the line's start or after whitespace (both hosts' own test)
_AT_IMPORT = re.compile(r"(?<!\S)@")
# `{{`, `{%`, `{#` and their closers: Jinja's delimiters
_JINJA = re.compile(r"([{%#])([{%#}])|([%#}])(})")

Escape = Callable[[str], str]


def _at_import(text: str) -> str:
    return _AT_IMPORT.sub(r"\\@", text) if "@" in text else text


def _jinja(text: str) -> str:
    # a literal delimiter, as Jinja writes one: {{ '{{' }}
    return _JINJA.sub(lambda found: "{{ '" + found.group() + "' }}", text) if "{" in text or "}" in text else text


def _nothing(text: str) -> str:
    return text


ESCAPES: dict[Syntax, Escape] = {
    "at-import": _at_import,
    # a comment standing alone is dropped, but a fact stands in a list item (`- <!-- x -->`), where Claude Code
    # sends it as written (seen in 2.1.332); our markers' word is defused in every fact (sanitize.inline)
    "html-comment": _nothing,
    "jinja": _jinja,
    # a fact never starts a line of a rules file (the template puts it in a list), and a leading `#` is escaped
    # for every host (pipeline.render.sanitize.inline)
    "front-matter": _nothing,
    "heading": _nothing,
}


def escape_for(syntaxes: Sequence[Syntax]) -> Escape | None:
    """One function applying every escape ``syntaxes`` need, in order (None when none changes anything)."""
    found = [ESCAPES[syntax] for syntax in syntaxes if ESCAPES[syntax] is not _nothing]
    if not found:
        return None

    def escape(text: str) -> str:
        for one in found:
            text = one(text)
        return text

    return escape
