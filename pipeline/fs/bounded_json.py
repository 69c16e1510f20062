"""Every JSON text we read from a user's file (or another tool's) goes through here: nesting is bounded first.

:func:`json.loads` recurses once per level, so a settings.json nested 5,000 deep
is a ``RecursionError`` (a traceback from every command that reads it), not a
decode error. The brackets are counted first in a loop, outside strings, and a
text past the bound is a :class:`JsonTooDeep` naming its line and column, which
callers refuse as they refuse invalid JSON. Real files nest a few levels deep.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .yaml import MAX_DEPTH  # one bound for every document a user hands us, YAML or JSON

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)  # a string (skipped whole) or a bracket


class JsonTooDeep(json.JSONDecodeError):
    """A JSON text nests arrays and objects deeper than the bound; a decode error, with its line and column."""


def loads(text: str, **options: Any) -> Any:
    """:func:`json.loads` of ``text`` once its nesting is within :data:`MAX_DEPTH`; :class:`JsonTooDeep` (a
    :class:`json.JSONDecodeError`) past it."""
    check_depth(text)
    return json.loads(text, **options)


def check_depth(text: str) -> None:
    """Raise :class:`JsonTooDeep` at the first bracket past :data:`MAX_DEPTH`; do nothing otherwise."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # so few openings cannot nest deeper (a quick count)
        return
    depth = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        depth += 1 if token in "[{" else -1
        if depth > MAX_DEPTH:
            raise JsonTooDeep(f"nested more than {MAX_DEPTH} levels deep", text, match.start())
