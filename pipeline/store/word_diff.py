"""Where two word sequences differ: the frame test's diff (:mod:`.supersede_rules`), kept apart because most of
its calls are answered without difflib and that shortcut carries its own proof (tests/store/test_detect.py)."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher


def changes(old: tuple[str, ...], new: tuple[str, ...]) -> list[tuple[str, int, int, int, int]]:
    """The opcodes but "equal" of difflib's diff of two word sequences. When each text has words between their
    common start and end, and those occur in one text only, that diff is known without running it: its longest
    match first aligns the start and the end alone, so one "replace" lies between them (tests/store/test_detect.py
    checks this against difflib). That is most judged pairs, and difflib cost a third of a judgment."""
    start = prefix_length(old, new)
    end, limit = 0, min(len(old), len(new)) - start
    while end < limit and old[-1 - end] == new[-1 - end]:
        end += 1
    gone, came = old[start:len(old) - end], new[start:len(new) - end]
    if not gone and not came:
        return []  # the same words
    # Both runs non-empty: the start and the end stay apart in both texts, so no longer match can join them.
    if gone and came and set(gone).isdisjoint(new) and set(came).isdisjoint(old):
        return [("replace", start, len(old) - end, start, len(new) - end)]
    return [op for op in SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if op[0] != "equal"]


def prefix_length(one: Sequence[object], other: Sequence[object]) -> int:
    """How many items (letters, words) the two start with in common."""
    for length, (mine, theirs) in enumerate(zip(one, other, strict=False)):
        if mine != theirs:
            return length
    return min(len(one), len(other))
