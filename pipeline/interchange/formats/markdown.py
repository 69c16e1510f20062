"""Reading Markdown as the importers need it: list items under headings, with their lines.

A CommonMark parser (markdown-it-py, which typer already brings through rich)
finds the items, so a ``-`` inside a code block, an HTML comment or a quoted
paragraph is never taken for one. A ``##`` (or deeper) heading names the topic of
the items under it; a ``#`` heading is the document's title and names none. A
nested item belongs to its top-level item: "Prefer f-strings" with "except in
logging calls" under it is one fact. A paragraph ending in ":" right above a list
labels each of its items ("Editor setup:" then "- tmux" is "Editor setup: tmux"),
and an item's fenced command is kept in it as inline code. Front matter and persona-tier's own region
are blanked out before parsing, line for line, so every line number stays the
file's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from ...errors import FactsFileError, FileSystemError
from ...fs.regions import find_regions
from ...fs.yaml import YamlTooComplex, check_yaml

FRONT_MATTER_FENCE = "---"
FRONT_MATTER_ENDS = ("---", "...")


@dataclass(frozen=True, slots=True)
class Item:
    """One top-level list item: the line it starts on, the heading above it (None: no ``##`` heading yet), and
    its text on one line, nested items included; ``end``: the line after its last (blank lines before the next
    item included)."""

    line: int
    topic: str | None
    text: str
    end: int = 0


def list_items(text: str) -> list[Item]:
    """Every top-level list item of ``text``, in order."""
    items: list[Item] = []
    topic: str | None = None
    depth = 0  # how many list items the current token is inside
    heading: int | None = None  # the level of the heading whose text comes next
    parts: list[str] = []
    start = end = 0
    label = ""  # a paragraph ending in ":" right above a list ("Editor setup:"): each item reads under it
    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "heading_open" and depth == 0:
            heading, label = int(token.tag[1:]), ""
        elif token.type == "list_item_open":
            depth += 1
            if depth == 1:
                parts, start = [], token.map[0] + 1 if token.map else 0
                end = token.map[1] + 1 if token.map else start + 1
        elif token.type == "list_item_close":
            depth -= 1
            if depth == 0 and parts:
                items.append(Item(start, topic, _joined([label, *parts] if label else parts), end))
        elif token.type in ("fence", "code_block") and depth > 0:
            parts.append(command(token.content))  # "Run tests:" and its fenced command: kept, never dropped
        elif token.type == "inline" and depth > 0:
            parts.append(" ".join(line.strip() for line in token.content.splitlines()))
        elif token.type == "inline" and heading is not None:
            topic = (token.content.strip() or None) if heading >= 2 else None  # a title names no topic
            heading = None
        elif token.type == "inline":
            label = token.content.strip() if token.content.strip().endswith(":") else ""
    return items


def command(code: str) -> str:
    """A fenced block's command(s) on one line, as inline code: "`make test`", "`uv sync; make test`"."""
    return "`" + "; ".join(line.strip() for line in code.splitlines() if line.strip()) + "`"


def _joined(parts: list[str]) -> str:
    """An item and the items nested in it, as one line: "Testing: use pytest; run make test"."""
    text = parts[0]
    for part in parts[1:]:
        # "…design questions." then "short ones otherwise" reads "…design questions; short ones otherwise", never
        # ".;" (an ellipsis stays: it is the user's).
        if text.endswith(":"):
            text += " " + part
        else:
            text = (text[:-1] if text.endswith((";", ",")) or (text.endswith(".") and not text.endswith(".."))
                    else text) + "; " + part
    return text


def blank_lines(text: str, ranges: list[tuple[int, int]]) -> str:
    """``text`` with the lines in each (first, last) range (1-based, inclusive) emptied, keeping every number."""
    lines = text.split("\n")
    for first, last in ranges:
        for index in range(first - 1, min(last, len(lines))):
            lines[index] = ""
    return "\n".join(lines)


def own_regions(text: str, name: str) -> list[tuple[int, int]]:
    """The lines of persona-tier's regions in ``text`` (what our renders wrote, never imported back); broken markers
    are one FactsFileError naming the file and line."""
    data = text.encode("utf-8")
    try:
        spans = find_regions(data, name)
    except FileSystemError as error:
        raise FactsFileError(str(error).replace("nothing was written", "nothing was imported")) from None
    return [(span.begin_line, data[:span.body_end].count(b"\n") + 1) for span in spans]


def front_matter(text: str) -> tuple[dict[str, Any], int]:
    """A file's front matter (the lines between a first ``---`` line and the next ``---`` or ``...`` line) read as
    YAML, and how many lines it takes (0: none). Front matter that is not a YAML mapping (Cursor writes
    ``globs: *.py`` unquoted, which YAML reads as an alias) still ends where its fence does, and gives no fields."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != FRONT_MATTER_FENCE:
        return {}, 0
    end = next((index for index in range(1, len(lines)) if lines[index].rstrip() in FRONT_MATTER_ENDS), None)
    if end is None:
        return {}, 0
    block = "\n".join(lines[1:end])
    try:
        check_yaml(block)
        fields = YAML(typ="safe").load(block)
    except (YAMLError, YamlTooComplex):
        fields = None
    return (fields if isinstance(fields, dict) else {}), end + 1
