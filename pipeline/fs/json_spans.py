"""Editing a JSON file the user owns (Claude Code's settings.json) without touching a byte we did not mean to.

The text is parsed once for positions: every object member and array item knows where it starts and ends.
A value is added after the last one of its container, in the container's own layout (its indentation, or
one line), and taken out with exactly the separator that adding it put in, so adding then removing gives
back the same bytes. Only valid JSON reaches the scanner: the caller checks it with :func:`json.loads` first.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_WS = " \t\r\n"
_SCALAR = re.compile(r"-?[0-9][0-9.eE+-]*|true|false|null")


@dataclass
class Node:
    """A JSON value's span in the text; an object's members (key, key start, value), an array's items."""

    start: int
    end: int = 0
    members: list[tuple[str, int, Node]] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)

    def member(self, key: str) -> Node | None:
        found = [value for name, _, value in self.members if name == key]
        return found[-1] if found else None  # json.loads keeps the last of duplicate keys too


def parse(text: str) -> Node:
    """The spans of a valid JSON text's values (its top value, with its members and items nested)."""
    return _value(text, _skip(text, 0))


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _value(text: str, at: int) -> Node:
    at = _skip(text, at)
    if text[at] == "{":
        return _container(text, at, "}", members=True)
    if text[at] == "[":
        return _container(text, at, "]", members=False)
    if text[at] == '"':
        return Node(at, _string_end(text, at))
    match = _SCALAR.match(text, at)
    assert match is not None  # valid JSON only
    return Node(at, match.end())


def _string_end(text: str, at: int) -> int:
    at += 1
    while text[at] != '"':
        at += 2 if text[at] == "\\" else 1
    return at + 1


def _container(text: str, at: int, close: str, *, members: bool) -> Node:
    node, at = Node(at), _skip(text, at + 1)
    while text[at] != close:
        if members:
            key_end = _string_end(text, at)
            value = _value(text, _skip(text, key_end) + 1)
            node.members.append((json.loads(text[at:key_end]), at, value))
        else:
            value = _value(text, at)
            node.items.append(value)
        at = _skip(text, value.end)
        at = _skip(text, at + 1) if text[at] == "," else at
    node.end = at + 1
    return node


def _layout(text: str, node: Node, depth: int) -> tuple[str, str] | None:
    """A multi-line container's (line break + indent of its members, indent of one level); None for one line."""
    children = [start for _, start, _ in node.members] or [item.start for item in node.items]
    eol = "\r\n" if "\r\n" in text else "\n"
    if "\n" not in text[node.start:node.end]:
        return (eol + "  ", "  ") if depth == 1 and not children else None  # an empty file's {} grows lines
    if children:
        indent = text[text.rfind("\n", 0, children[0]) + 1:children[0]]
        unit = indent[: len(indent) // depth] if depth else indent
        return eol + indent, unit or "  "
    return eol + "  " * depth, "  "


def dumped(value: Any, newline: str | None, unit: str) -> str:
    """``value`` as JSON in a container's layout: indented under ``newline`` (a line break and indent), or on
    one line."""
    if newline is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", newline)


def add(text: str, node: Node, value: Any, *, key: str | None, depth: int) -> str:
    """``text`` with ``value`` added last to the container ``node`` (as member ``key`` of an object) at
    nesting ``depth`` (the top value's members are at depth 1)."""
    layout = _layout(text, node, depth)
    newline, unit = layout if layout is not None else (None, "  ")
    piece = (json.dumps(key, ensure_ascii=False) + ": " if key is not None else "") + dumped(value, newline, unit)
    children = [member for _, _, member in node.members] or node.items
    if children:
        at = children[-1].end
        return text[:at] + ("," + newline if newline else ", ") + piece + text[at:]
    close = node.end - 1
    outer = newline[: len(newline) - len(unit)] if newline else ""
    return text[:node.start + 1] + (newline + piece + outer if newline else piece) + text[close:]


def remove(text: str, parent: Node, child: Node) -> str:
    """``text`` without ``child`` (an item of ``parent``, or the value of one of its members) and the separator
    before it, or after it when it is first; an emptied container keeps only its brackets."""
    spans = [(start, value.end) for _, start, value in parent.members] or [(i.start, i.end) for i in parent.items]
    index = next(i for i, (_, end) in enumerate(spans) if end == child.end)
    if len(spans) == 1:
        return text[:parent.start + 1] + text[parent.end - 1:]
    if index > 0:
        return text[:spans[index - 1][1]] + text[spans[index][1]:]
    return text[:spans[0][0]] + text[spans[1][0]:]
