"""Fact text made inert: one line, no control characters, no structure of its own."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape

# ANSI CSI/OSC sequences first, then any other C0/C1 control except whitespace.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")


def inline(text: str) -> str:
    """One line of plain text that cannot start a heading, a list or a section.

    Newlines (including Unicode line separators) collapse to spaces, control
    characters and terminal escapes go, and a leading ``#`` is escaped, so a
    fact can never forge structure in any template.
    """
    cleaned = _CONTROL.sub("", _ANSI.sub("", text))
    flat = _SPACE.sub(" ", cleaned).strip()
    if flat.startswith("#"):
        flat = "\\" + flat
    return flat


def xml(text: str) -> str:
    """Escape for XML text and attribute values."""
    return escape(str(text), {'"': "&quot;", "'": "&apos;"})


def dedupe_key(text: str) -> str:
    """Two facts with the same key are near-duplicates: same words, ignoring case and punctuation."""
    return " ".join(_PUNCT.sub("", text.casefold()).split())
