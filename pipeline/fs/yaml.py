"""Bounds on every YAML document the project reads: nesting depth and alias expansion.

YAML parsers recurse once per nesting level and expand aliases in full, so a
hostile file can crash the process (50,000 nested ``[`` segfaulted the C
loader; 1,000 gave a RecursionError) or exhaust its memory (a nine-line alias
bomb took 3.9 GB). Every document is checked here, from its event stream,
before anything is built from it. Facts files, our config files and Hermes'
config.yaml all nest a few levels deep, so the limits never touch real files.
"""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 64
MAX_NODES = 2_000_000  # scalars and collections, counting every alias as a full copy of what it names

_OPEN = "[{"
_SPECIAL = re.compile(r"[\[\]{}'\"#\n]")


class YamlTooComplex(ValueError):
    """A document nests too deeply or expands too far; the message says where."""


def check_yaml(text: str) -> None:
    """Raise :class:`YamlTooComplex` for a document past the limits; do nothing otherwise.

    Syntax errors are left to the real loader, which reports them with a line.
    """
    from ruamel.yaml import YAML  # ruamel loads only when a YAML document is read
    from ruamel.yaml.error import YAMLError

    _check_flow_depth(text)
    try:
        _check_events(YAML(typ="safe").parse(text))
    except YAMLError:
        return


def _check_flow_depth(text: str) -> None:
    # libyaml parses deep flow nesting in quadratic time (50,000 levels: 13 s), so deep
    # brackets are counted on the raw text first, skipping quoted strings and comments.
    depth, line, quote, comment = 0, 1, "", False
    for match in _SPECIAL.finditer(text):
        char, start = match.group(), match.start()
        if char == "\n":
            line, comment = line + 1, False
        elif comment:
            continue
        elif quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            if depth or start == 0 or text[start - 1] in " \t\n:,[{-":
                quote = char
        elif char == "#":
            comment = start == 0 or text[start - 1] in " \t\n"
        elif char in _OPEN:
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlTooComplex(f"line {line}: nested more than {MAX_DEPTH} levels deep")
        else:
            depth = max(0, depth - 1)


def _check_events(events: Any) -> None:
    # One pass, constant work per event: ``count`` is the expanded size so far, so an
    # anchored node's size is the growth of ``count`` while it was open.
    from ruamel.yaml.events import (
        AliasEvent,
        MappingEndEvent,
        MappingStartEvent,
        ScalarEvent,
        SequenceEndEvent,
        SequenceStartEvent,
    )

    count = 0
    open_nodes: list[tuple[str | None, int]] = []
    sizes: dict[str, int] = {}
    for event in events:
        kind = event.__class__
        if kind is ScalarEvent:
            count += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif kind is AliasEvent:
            count += sizes.get(event.anchor, 1)
            if count > MAX_NODES:
                raise YamlTooComplex(f"line {_line(event)}: aliases expand past {MAX_NODES:,} nodes")
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if len(open_nodes) >= MAX_DEPTH:
                raise YamlTooComplex(f"line {_line(event)}: nested more than {MAX_DEPTH} levels deep")
            open_nodes.append((event.anchor, count))
            count += 1
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            anchor, began = open_nodes.pop()
            if anchor:
                sizes[anchor] = count - began


def _line(event: Any) -> int:
    mark = getattr(event, "start_mark", None)
    return mark.line + 1 if mark is not None else 0


def front_matter(mapping: dict[str, Any]) -> str:
    """``mapping`` as a file's YAML front matter, between ``---`` lines (dumped by ruamel.yaml, keys in order)."""
    import io

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(dict(mapping), stream)
    return f"---\n{stream.getvalue()}---\n"


def read_front_matter(text: str) -> dict[str, Any] | None:
    """The YAML front matter at the top of ``text`` (None when it has none), parsed by ruamel.yaml."""
    if not text.startswith("---\n"):
        return None
    end = text.find("\n---\n", 3)
    if end == -1:
        return None
    from ruamel.yaml import YAML

    check_yaml(text[4:end + 1])
    found = YAML(typ="safe").load(text[4:end + 1])
    return dict(found) if isinstance(found, dict) else None
