"""``instructions``: a coding agent's instruction file, as the user keeps it.

``CLAUDE.md``, ``AGENTS.md``, ``GEMINI.md``, ``.github/copilot-instructions.md``,
a Cursor rule (``.cursor/rules/NAME.mdc``) and their kin hold the user's
standing instructions as bullet lists under headings. Each top-level list item
is a fact, under the topic of the ``##`` heading above it; items before any
``##`` heading take the front matter's ``name`` or ``description`` (Continue's
and Cursor's rules carry one), else ``--topic``. Front matter is skipped, and
so is persona-tier's own region (what our renders put there is already in the
store). Paragraphs and code are not lists, and are left alone.
"""

from __future__ import annotations

from typing import Any

from ...store import MAX_TOPIC_CHARS
from ..fact_entry import Parsed, offer
from .markdown import blank_lines, front_matter, list_items, own_regions
from .registry import Source, import_format


@import_format("instructions", summary="CLAUDE.md, AGENTS.md, GEMINI.md, Copilot or Cursor rules: list items under "
               "headings, outside persona-tier's region, front matter skipped")
def instructions(source: Source) -> Parsed:
    """Every top-level list item outside the front matter and our own region, with its heading's topic."""
    fields, skipped = front_matter(source.text)
    hidden = own_regions(source.text, source.name) + ([(1, skipped)] if skipped else [])
    fallback = _topic_field(fields) or source.topic
    parsed = Parsed()
    for item in list_items(blank_lines(source.text, hidden)):
        parsed.take(offer(f"line {item.line}", {"topic": item.topic or fallback, "content": item.text}))
    return parsed


def _topic_field(fields: dict[str, Any]) -> str | None:
    """The front matter's own name for the rule, when it is one short line."""
    for key in ("name", "description"):
        value = fields.get(key)
        if isinstance(value, str) and value.strip() and "\n" not in value.strip() \
                and len(value.strip()) <= MAX_TOPIC_CHARS:
            return value.strip()
    return None
