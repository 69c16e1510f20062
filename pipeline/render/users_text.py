"""What the user's own lines in a region's file already say, so our region does not say it again.

A region target writes our part of a file the user also writes (``CLAUDE.md``): the agent reads the whole
file, so a fact the user's lines already hold (an adopted item, or one they typed again) would reach it twice.
The render leaves such a fact out of that file's region, and `persona explain` says why (:data:`ALREADY_YOURS`);
the budget then counts only what the region holds.

The comparison is by normal form: Unicode NFKC, case, whitespace, and the punctuation that ends a sentence or
joins a list item to the items nested in it (so "Testing: use pytest; run make test" is held by an item
"Testing:" with "use pytest" and "run make test" under it, however an importer joined them). Only whole lines
and whole list items count: a fact is never left out because a longer line happens to contain it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from pathlib import Path

from ..errors import PersonaError
from ..fs.region_file import region_path, snapshot
from ..fs.regions import find_regions
from .explain import ALREADY_YOURS
from .model import LeftOut, RankedPersona, RankedSection

# What ends a sentence or joins an item to its nested ones, at either edge of a word.
EDGE_PUNCTUATION = ".,;:!?…。、，；：！？"
# What starts a line without being its text: quote marks, a heading's hashes, a list item's marker, a task box.
LEAD = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+)?(?:(?:[-*+]|\d{1,9}[.)])\s+)?(?:\[[ xX]\]\s+)?")
LIST_ITEM = re.compile(r"^\s*(?:>\s*)*(?:[-*+]|\d{1,9}[.)])\s+")

Words = tuple[str, ...]


def normal_words(text: str) -> Words:
    """``text`` in the normal form facts and the user's lines are compared in (see the module's docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold().split()
    return tuple(word for word in (raw.strip(EDGE_PUNCTUATION) for raw in folded) if word)


def users_text(target_path: Path, max_bytes: int) -> frozenset[Words]:
    """Every line and every list item (with its nested items) of the file outside persona-tier's regions, in
    normal form; nothing when the file is missing or cannot be read (its write then says why)."""
    return pieces(users_lines(target_path, max_bytes))


def users_lines(target_path: Path, max_bytes: int) -> list[str]:
    """The lines of a region's file outside persona-tier's regions; none when the file is missing or cannot be
    read (its write then says why)."""
    try:
        path = region_path(target_path)
        data = snapshot(path, max_bytes).data
        for span in reversed(find_regions(data, str(path))):
            data = data[:span.start] + data[span.stop:]
    except (PersonaError, OSError):
        return []
    return data.decode("utf-8", "replace").splitlines()


def pieces(lines: list[str]) -> frozenset[Words]:
    """Each line's text, and each list item's with every more indented line that follows it without a blank."""
    found = {normal_words(LEAD.sub("", line)) for line in lines}
    for index, line in enumerate(lines):
        if LIST_ITEM.match(line):
            found.add(normal_words(" ".join(LEAD.sub("", part) for part in _item(lines, index))))
    found.discard(())
    return frozenset(found)


def _item(lines: list[str], first: int) -> list[str]:
    indent = _indent(lines[first])
    block = [lines[first]]
    for line in lines[first + 1:]:
        if not line.strip() or _indent(line) <= indent:
            break
        block.append(line)
    return block


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def without_users_text(ranked: RankedPersona, held: frozenset[Words], *, explain: bool) -> RankedPersona:
    """``ranked`` without the facts ``held`` already says (a section left empty goes too); with ``explain``,
    each is left out saying so."""
    if not held:
        return ranked
    sections: list[RankedSection] = []
    out: list[LeftOut] = []
    for section in ranked.sections:
        yours = [normal_words(fact.fact.content) in held for fact in section.facts]
        kept = tuple(fact for fact, known in zip(section.facts, yours, strict=True) if not known)
        out += [LeftOut(fact.fact, ALREADY_YOURS, fact.score)
                for fact, known in zip(section.facts, yours, strict=True) if known]
        if kept:
            sections.append(section if len(kept) == len(section.facts) else replace(section, facts=kept))
    if not out:
        return ranked
    return replace(ranked, sections=tuple(sections), left_out=ranked.left_out + (tuple(out) if explain else ()))
