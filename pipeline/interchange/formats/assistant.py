"""``assistant``: what an old assistant (ChatGPT, Claude, Gemini, Copilot) answered to the prompt
``persona import --prompt NAME`` prints (:mod:`pipeline.interchange.import_prompt`), pasted as it is.

The answer holds one code block that starts with the line :data:`MARK`; inside it, ``## topic`` headings and
``- fact`` list items (an indented line continues the item above it). Whatever the assistant wrote around the
block (a greeting, a closing question, the fences themselves) is left out, and so is any line in it that is
neither a heading nor an item ("(nothing saved)"), so only what it listed as a fact comes in. Nothing is
declared: a fact already there stays as the user has it, and a changed one is proposed against the old.
``persona import -`` reads such an answer without ``--from``: the mark tells it apart from a facts file.
"""

from __future__ import annotations

import re

from ..fact_entry import Parsed, offer
from .lines import HEADING, MARKER
from .registry import Source, import_format

MARK = "persona-tier memory list"
FENCE = re.compile(r"^\s*(```|~~~)")


def is_answer(text: str) -> bool:
    """Whether ``text`` holds an answer to the prompt (its mark on a line of its own)."""
    return any(line.strip().strip("#").strip().lower() == MARK for line in text.split("\n"))


@import_format("assistant", summary="an old assistant's answer to `persona import --prompt NAME`, pasted whole")
def assistant(source: Source) -> Parsed:
    """Each list item of the marked block as a fact, under the heading above it, with its line."""
    facts: list[tuple[int, str, str]] = []
    topic, going = source.topic, False
    for number, line in _block(source.text):
        heading = HEADING.match(line)
        if heading is not None:
            topic, going = heading["topic"].strip() or source.topic, False
        elif MARKER.match(line):
            facts.append((number, topic, MARKER.sub("", line, count=1).strip()))
            going = True
        elif going and line[:1].isspace() and line.strip():
            start, fact_topic, text = facts[-1]
            facts[-1] = (start, fact_topic, f"{text} {line.strip()}")
        else:
            going = False
    parsed = Parsed()
    for number, fact_topic, text in facts:
        parsed.take(offer(f"line {number}", {"topic": fact_topic, "content": text}))
    return parsed


def _block(text: str) -> list[tuple[int, str]]:
    """The numbered lines after the mark, up to the end of its code block (or of the text)."""
    lines = list(enumerate(text.split("\n"), start=1))
    start = next((index for index, (_, line) in enumerate(lines) if is_answer(line)), None)
    if start is None:
        return lines
    block = []
    for number, line in lines[start + 1:]:
        if FENCE.match(line):
            break
        block.append((number, line))
    return block
