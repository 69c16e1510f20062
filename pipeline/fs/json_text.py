"""The text fields of one JSON record a host wrote, found and edited in place, every other character kept.

A record is parsed with every object's members in order (duplicate keys too), and walked in document order beside
the string tokens of its text, so each string value is known by its exact place. Which values are text is the
host's history format (:class:`Roles`, data in the host's module): a key in ``structure`` (type, role, ids, paths,
timestamps, model names) is never changed, wherever it stands; under a key in ``text`` every string is text (unless a
structure key says otherwise). Keys are never changed. A text value that holds JSON (a tool's output, a call's
arguments) is parsed in turn, within :mod:`.bounded_json`'s bounds, and every string in it is text.

An edit replaces the characters that spelled the match with the marker, in the token's own spelling: escapes
elsewhere in the string (``\\u00e9``, ``\\/``, a cut emoji's lone ``\\ud83d``) stay as they were, and a string
inside a string is edited through both levels of escapes, so the outer string keeps its spelling too.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from .bounded_json import check_depth
from .text_find import MARKER, Finder

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: plain runs matched whole
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)", re.DOTALL)
_PAIR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
MAX_LEVELS = 8  # JSON inside a string inside a string...: deeper than this, a string is only text


class Roles(Protocol):
    """Which keys of a host's records hold text and which are structure (``History.format`` in its module)."""

    @property
    def text(self) -> frozenset[str]: ...
    @property
    def structure(self) -> frozenset[str]: ...
    @property
    def messages(self) -> frozenset[str]: ...


class _Members(list[tuple[str, Any]]):
    """An object's members in document order, duplicate keys kept (``json.loads``' ``object_pairs_hook``)."""


@dataclass
class Edits:
    """What to change in one JSON text: the spans of its characters that become the marker, and whether a short
    fact stands in it where it is not replaced."""

    spans: list[tuple[int, int]] = field(default_factory=list)
    short_left: bool = False

    def applied(self, text: str) -> str:
        """``text`` with every span replaced by the marker."""
        pieces, at = [], 0
        for start, end in self.spans:
            pieces += [text[at:start], MARKER]
            at = end
        return "".join(pieces) + text[at:]


def parse(text: str) -> Any:
    """A JSON text's value with objects as ordered member lists; ValueError (JsonTooDeep included) when it is not
    JSON or nests past the bound."""
    check_depth(text)
    return json.loads(text, object_pairs_hook=_Members)


def edits(text: str, value: Any, roles: Roles | None, finder: Finder, *, level: int = 0) -> Edits:
    """Where the finder's texts stand in ``text``'s text fields (``value`` is :func:`parse` of it); ``roles`` None:
    a JSON text inside a text field, whose every string is text."""
    found = Edits()
    tokens = (match.span() for match in _STRING.finditer(text))
    for span, mode, message in _strings(value, roles, tokens):
        if mode:
            _field(text, span, message, finder, level, found)
    found.spans.sort()
    return found


def _strings(value: Any, roles: Roles | None, tokens: Iterator[tuple[int, int]]
             ) -> Iterator[tuple[tuple[int, int], bool, bool]]:
    """Each string token's span with (is it text, is it a message's own text), in document order; keys are never
    text. Iterative, so a deep value costs no recursion."""
    stack: list[tuple[Any, bool, bool] | None] = [(value, roles is None, False)]
    while stack:
        item = stack.pop()
        if item is None:  # a key
            next(tokens)
            continue
        node, text, message = item
        if isinstance(node, str):
            yield next(tokens), text, message
        elif isinstance(node, _Members):
            for key, member in reversed(node):
                stack.append(_member(key, member, text, roles))
                stack.append(None)
        elif isinstance(node, list):
            stack += [(member, text, False) for member in reversed(node)]


def _member(key: str, member: Any, text: bool, roles: Roles | None) -> tuple[Any, bool, bool]:
    if roles is None:
        return member, True, False
    if key in roles.structure:
        return member, False, False
    if key in roles.text:
        return member, True, isinstance(member, str) and key in roles.messages
    return member, text, False


def _field(text: str, span: tuple[int, int], message: bool, finder: Finder, level: int, found: Edits) -> None:
    """Find the texts in one string token (quotes included) of ``text``, a JSON text inside it included."""
    inner = text[span[0] + 1:span[1] - 1]
    decoded = json.loads(text[span[0]:span[1]]) if "\\" in inner else inner
    spans, short_left = _in_value(decoded, message, finder, level)
    found.short_left |= short_left
    if spans:
        where = _Positions(inner, span[0] + 1)
        found.spans += [(where.at(start), where.at(end)) for start, end in spans]


def _in_value(decoded: str, message: bool, finder: Finder, level: int) -> tuple[list[tuple[int, int]], bool]:
    nested = _nested(decoded, level)
    if nested is not None:
        inner = edits(decoded, nested, None, finder, level=level + 1)
        return inner.spans, inner.short_left
    found = finder.find(decoded, message=message)
    return found.spans, found.short_left


def _nested(decoded: str, level: int) -> Any:
    """The value of a string that is itself a JSON object or array (within the bounds), else None."""
    stripped = decoded.strip()
    if level >= MAX_LEVELS or len(stripped) < 2 or (stripped[0], stripped[-1]) not in (("{", "}"), ("[", "]")):
        return None
    try:
        return parse(decoded)
    except (ValueError, RecursionError):
        return None


class _Positions:
    """Maps a decoded string's character offsets to offsets in the text its token stands in."""

    def __init__(self, inner: str, base: int) -> None:
        self.decoded: list[int] = [0]
        self._raw: list[int] = [base]
        skipped = 0
        for match in _ESCAPE.finditer(inner):
            if skipped:
                skipped -= 1
                continue
            start, end = match.span()
            if _PAIR.match(inner, start):  # a surrogate pair: two escapes, one character
                end, skipped = start + 12, 1
            before = self.decoded[-1] + (start - (self._raw[-1] - base))
            self.decoded += [before, before + 1]
            self._raw += [base + start, base + end]

    def at(self, offset: int) -> int:
        """Where the character at ``offset`` of the decoded string starts in the text (or, past the last, ends)."""
        index = bisect.bisect_right(self.decoded, offset) - 1
        return self._raw[index] + offset - self.decoded[index]

