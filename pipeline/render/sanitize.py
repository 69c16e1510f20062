"""Fact text made inert: one line, no control characters, no structure of its own."""

from __future__ import annotations

import re

from ..fs.regions import MARKER_WORD, defuse

# ANSI CSI/OSC sequences first, then any other C0/C1 control except whitespace.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SPACE = re.compile(r"\s+")


def inline(text: str) -> str:
    """One line of plain text that cannot start a heading, a list or a section.

    Newlines (including Unicode line separators) collapse to spaces, control
    characters and terminal escapes go, a leading ``#`` is escaped, and the
    word our region markers are made of is defused (:func:`defuse`), so a
    fact can never forge structure in any template, nor a marker in a file.
    """
    if MARKER_WORD in text:
        text = defuse(text)
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        # The common case, in one C-speed test: nothing to remove (printable text has no control
        # characters, and its only whitespace is single spaces) and nothing to collapse.
        return "\\" + text if text.startswith("#") else text
    cleaned = _CONTROL.sub("", _ANSI.sub("", text))
    flat = _SPACE.sub(" ", cleaned).strip()
    if flat.startswith("#"):
        flat = "\\" + flat
    return flat



_XML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"})


def xml(text: str) -> str:
    """Escape for XML text and attribute values (one translation; xml.sax costs start-up time)."""
    return str(text).translate(_XML)

