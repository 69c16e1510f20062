"""``lines``: a pasted list, one fact per line or list item.

What ChatGPT's and Claude's memory pages show, copied (ChatGPT's data export
holds no memories, so a user copies the list). A line that starts a list item
(``-``, ``*``, ``+``, ``•``, ``1.``, ``1)``) starts a fact; an indented line after
it continues it; any other line is a fact of its own. A Markdown heading
(``# Work``, any level) names the topic of the lines after it. Blank lines are
skipped.
"""

from __future__ import annotations

import re

from ..fact_entry import Parsed, offer
from .registry import Source, import_format

MARKER = re.compile(r"^\s*(?:[-*+•·‣◦]|\d{1,9}[.)])\s+")
HEADING = re.compile(r"^#{1,6}\s+(?P<topic>.*?)\s*#*\s*$")


@import_format("lines", summary="a pasted list: one fact per line or list item (ChatGPT's or Claude's memory page)")
def lines(source: Source) -> Parsed:
    """Each line or list item as a fact, with the line it starts on."""
    facts: list[tuple[int, str, str]] = []  # (line, topic, text) of each fact so far
    topic, going = source.topic, False  # going: the line before was part of the last fact
    for number, line in enumerate(source.text.split("\n"), start=1):
        heading = HEADING.match(line)
        if heading is not None:
            topic = heading["topic"] or source.topic
        elif going and line[:1].isspace() and line.strip() and not MARKER.match(line):
            start, fact_topic, text = facts[-1]
            facts[-1] = (start, fact_topic, f"{text} {line.strip()}")
        elif line.strip():
            facts.append((number, topic, MARKER.sub("", line, count=1).strip()))
        going = bool(line.strip()) and heading is None
    parsed = Parsed()
    for number, fact_topic, text in facts:
        parsed.take(offer(f"line {number}", {"topic": fact_topic, "content": text}))
    return parsed
