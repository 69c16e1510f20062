"""Where a text is still held in this process: in a declared cache (``pipeline.caches``), or in any object.

Read through the garbage collector's view of each object (what it holds), so a text kept inside a result, a
key, a dataclass or a nested map is found as well as one kept as it is.
"""

from __future__ import annotations

import gc
import types
from collections.abc import Iterable, Iterator
from typing import Any

from pipeline import caches


def strings(roots: Iterable[Any], depth: int = 8) -> Iterator[str]:
    """Every string ``roots`` hold, down to ``depth`` objects away (bytes read as UTF-8); not through a module,
    a class or a function (they reach everything)."""
    seen: set[int] = set()
    stack = [(root, 0) for root in roots]
    while stack:
        item, level = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, str | bytes):
            yield item if isinstance(item, str) else item.decode("utf-8", "replace")
        elif level < depth and not isinstance(item, type | types.ModuleType | types.FunctionType):
            stack += [(found, level + 1) for found in gc.get_referents(item)]


def text_caches() -> list[str]:
    return [declared.name for declared in caches.declared() if declared.holds_text]


def caches_holding(needle: str) -> list[str]:
    """The declared caches that may hold fact text and hold ``needle`` now."""
    return sorted(name for name in text_caches() if any(needle in found for found in strings(caches.entries(name))))


def anywhere(needle: str) -> list[str]:
    """Every string an object of this process holds with ``needle`` in (but ``needle`` itself)."""
    gc.collect()
    return [found[:200] for found in strings(gc.get_objects(), depth=1) if needle in found and found is not needle]
