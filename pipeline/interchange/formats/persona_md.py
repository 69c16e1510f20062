"""``persona-md``: a persona.md as the existing tier writes it, or as a user writes it by hand.

Mnemosyne 3.15's writer (``mnemosyne/core/persona.py``, ``render_persona_markdown``) emits::

    # Persona

    ## communication

    - Answers tersely. [importance: 0.85] (long-term)
    - Uses British spelling. [importance: 0.70] (permanent)

Each ``##`` heading is a topic and each list item a fact. The writer's marks
are read back: ``[importance: X]`` is the confidence, ``(permanent)`` and
``(long-term)`` the tier; an item without them (one written by hand, or by the
writer for a working-tier or unranked candidate) is ``long_term`` at the
default confidence, as a facts file's entry is.
"""

from __future__ import annotations

import re

from ..fact_entry import Parsed, offer
from .markdown import list_items
from .registry import Source, import_format

MARKS = re.compile(r"^(?P<content>.*?)\s*\[importance:\s*(?P<importance>[^\]]*)\]\s*"
                   r"(?:\((?P<tier>permanent|long-term|long_term|working)\))?\s*$")
TIERS = {"permanent": "permanent", "long-term": "long_term", "long_term": "long_term", "working": "working"}


@import_format("persona-md", summary="a persona.md: ## headings are topics, list items are facts")
def persona_md(source: Source) -> Parsed:
    """Every list item, with the topic of the ``##`` heading above it and the writer's marks read back."""
    parsed = Parsed()
    for item in list_items(source.text):
        parsed.take(offer(f"line {item.line}", {"topic": item.topic or source.topic, "content": item.text,
                                                **_marks(item.text)}))
    return parsed


def _marks(text: str) -> dict[str, object]:
    """The content without the writer's marks, and the confidence and tier they give."""
    match = MARKS.match(text)
    if match is None:
        return {}
    importance = match["importance"].strip()
    try:
        confidence: object = float(importance)
    except ValueError:
        confidence = importance  # reported as a bad entry, with its line
    tier = TIERS[match["tier"]] if match["tier"] else "long_term"
    return {"content": match["content"], "confidence": confidence, "tier": tier}
