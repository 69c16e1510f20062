"""A host's own memory file with some of its entries taken out (a forget reaching back: issue 53), every other byte
as it was.

The entries are those `persona learn` reads in it, by the same format: an instruction file's top-level list items
outside our region and its front matter (Gemini CLI's ``GEMINI.md``, Claude Code's and Gemini CLI's project
``MEMORY.md``), or Hermes' ``§`` entries (``USER.md``). An item goes with its lines (a nested item or a continued line
included, the blank lines after it kept); a ``§`` entry goes with one of the delimiters beside it.
"""

from __future__ import annotations

from collections.abc import Callable

from .formats import hermes
from .formats.hermes import DELIMITER, entry_text
from .formats.markdown import blank_lines, front_matter, list_items, own_regions

Drop = Callable[[str], bool]  # whether the entry whose fact reads this text goes


def without_entries(text: str, fmt: str, name: str, drop: Drop) -> tuple[str, int]:
    """``text`` (the file ``name``, in format ``fmt``: ``instructions`` or ``hermes``) without the entries ``drop``
    names, and how many went."""
    if fmt == hermes.NAME:
        return _without_hermes(text, drop)
    return _without_items(text, name, drop)


def _without_items(text: str, name: str, drop: Drop) -> tuple[str, int]:
    _, skipped = front_matter(text)
    hidden = own_regions(text, name) + ([(1, skipped)] if skipped else [])
    lines = text.split("\n")
    gone: set[int] = set()  # 0-based line numbers
    count = 0
    for item in list_items(blank_lines(text, hidden)):
        if drop(item.text):
            last = max(item.line, item.end - 1)
            while last > item.line and not lines[last - 1].strip():
                last -= 1  # the blank lines after an item stay: the list keeps its spacing
            gone.update(range(item.line - 1, last))
            count += 1
    return "\n".join(line for index, line in enumerate(lines) if index not in gone), count


def _without_hermes(text: str, drop: Drop) -> tuple[str, int]:
    entries = text.split(DELIMITER)
    kept = [entry for entry in entries if not (entry.strip() and drop(entry_text(entry.split("\n"))))]
    return DELIMITER.join(kept), len(entries) - len(kept)
