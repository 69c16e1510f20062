"""``hermes``: Hermes Agent's built-in memory files, ``$HERMES_HOME/memories/USER.md`` and ``MEMORY.md``.

Hermes 0.19's ``memory`` tool (``tools/memory_tool.py``) keeps each file as
entries joined by a line holding only ``§`` (the delimiter is ``"\\n§\\n"``); an
entry may span several lines and may hold a ``§`` inside a line. USER.md is
what the agent learned about the user: each entry is a fact. MEMORY.md is the
agent's own notes, mostly about its environment ("the repo's tests run with
make test"): its entries are offered as notes to review, not taken in, unless
the import is told to accept them (``--accept-notes``); then they enter at the
``working`` tier, rendered last and, with retention on, let go when never
reinforced. The file is told by its name; any other name (standard input too)
reads as USER.md.
"""

from __future__ import annotations

import re

from ..fact_entry import Parsed, offer
from .markdown import command
from .registry import Source, import_format

ITEM = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")
FENCE = "```"

DELIMITER = "\n§\n"
NOTES_FILE = "MEMORY.md"
NAME = "hermes"  # the format's name (its host's too)


@import_format(NAME, summary="Hermes' USER.md (each § entry a fact) or MEMORY.md (notes offered for review)")
def hermes(source: Source) -> Parsed:
    """Each ``§`` entry, on one line, with the line it starts on; MEMORY.md's as notes."""
    notes = source.file_name.upper() == NOTES_FILE.upper()
    parsed = Parsed()
    line = 1
    for chunk in source.text.split(DELIMITER):
        lines = chunk.split("\n")
        first = next((index for index, text in enumerate(lines) if text.strip()), None)
        if first is not None:
            content = entry_text(lines)
            fields = {"topic": source.topic, "content": content, "tier": "working" if notes else "long_term"}
            parsed.take(offer(f"line {line + first}", fields), note=notes)
        line += len(lines) + 1  # the entry's lines, then the delimiter's own
    return parsed


def entry_text(lines: list[str]) -> str:
    """An entry's lines as one readable fact: "Editor setup:" and its items "- Neovim - tmux" read "Editor setup:
    Neovim; tmux", never a run-on with the dashes; a fenced command is kept as inline code."""
    parts: list[tuple[bool, str]] = []  # (an item or a command, its text)
    fenced: list[str] | None = None
    for line in (text.strip() for text in lines):
        if line.startswith(FENCE):
            if fenced is not None:
                parts.append((True, command("\n".join(fenced))))
            fenced = [] if fenced is None else None
        elif fenced is not None:
            fenced.append(line)
        elif line:
            item = ITEM.match(line)
            parts.append((item is not None, item[1] if item else line))
    if fenced:  # a fence left open: its lines are still the user's
        parts.append((True, command("\n".join(fenced))))
    return _joined(parts)


def _joined(parts: list[tuple[bool, str]]) -> str:
    text = ""
    for listed, part in parts:
        if not text or text.endswith(":") or not listed:
            text = f"{text} {part}".strip()
        else:
            text = text.rstrip(";,") + "; " + part
    return text
