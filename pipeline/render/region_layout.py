"""How our region reads beside the user's own text in the file they write (#49).

A region is part of a file the user writes (``CLAUDE.md``, ``AGENTS.md``), which the agent reads whole. So
the render of a region opens with one line saying what follows is facts about the user (:data:`INTRO`), puts
its sections at the heading level the user's own sections use (never above the user's title: under a
``# Title`` they are ``##``, in a file of ``##`` sections under a ``#`` title with ``###`` sub-sections still
``##``), and never repeats one of the user's headings: the user's ``## Git`` and ours would read as one
topic split in two, so ours becomes ``## Git (about the user)`` (:data:`DISTINCT`). A suffix rather than
one parent heading folding ours: every other section keeps its plain name and its level beside the user's,
the file gains no heading level (Markdown has six), and the cap still cuts at our sections' own headings.

Only a Markdown target is dressed (its section boundary is a heading, ``## ``); the whole text is re-made
from the template's render on every try of the fit, so the cap counts exactly what is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .users_text import normal_words

INTRO = "_Facts about the user, kept by persona-tier._"
DISTINCT = " (about the user)"
MAX_LEVEL = 6
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BOUNDARY = re.compile(r"#{1,6} ")


@dataclass(frozen=True, slots=True)
class RegionLayout:
    """What the user's file says of its headings: the level our sections take (None: the file has no heading,
    the template's own level stands) and the user's headings' texts in normal form."""

    level: int | None = None
    taken: frozenset[tuple[str, ...]] = frozenset()


def layout_of(lines: list[str]) -> RegionLayout:
    """The layout of the user's lines (the file without our regions)."""
    headings = list(_headings(lines))
    levels = [level for level, _ in headings]
    return RegionLayout(_section_level(levels), frozenset(normal_words(text) for _, text in headings))


def _headings(lines: list[str]) -> list[tuple[int, str]]:
    """Each heading of ``lines`` as (level, text): ATX (``## Git``) and setext (``Git`` over ``===``), outside
    fenced code and front matter."""
    found: list[tuple[int, str]] = []
    fence: str | None = None
    start = _after_front_matter(lines)
    for index in range(start, len(lines)):
        line = lines[index]
        opening = _FENCE.match(line)
        if fence is not None:
            fence = None if opening and opening.group(1).startswith(fence) else fence
        elif opening:
            fence = opening.group(1)
        elif match := _ATX.match(line):
            found.append((len(match.group(1)), match.group(2) or ""))
        elif (under := _SETEXT.match(line)) and index > start and _paragraph(lines[index - 1]):
            found.append((1 if under.group(1)[0] == "=" else 2, lines[index - 1].strip()))
    return found


def _after_front_matter(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return 0
    closing = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    return 0 if closing is None else closing + 1


def _paragraph(line: str) -> bool:
    """Whether ``line`` is text a setext underline makes a heading (not blank, a heading or a list item)."""
    stripped = line.strip()
    return bool(stripped) and not _ATX.match(line) and not re.match(r"(?:[-*+]|\d{1,9}[.)])(?:\s|$)", stripped)


def _section_level(levels: list[int]) -> int | None:
    """The level the user's sections use: under a title (the first heading, the one at its level, with the
    others deeper, or an H1), the shallowest of the others, else one below it; without a title, the shallowest."""
    if not levels:
        return None
    top, rest = levels[0], levels[1:]
    if top < min(rest, default=MAX_LEVEL + 1) and (rest or top == 1):
        return min(min(rest, default=top + 1), MAX_LEVEL)
    return min(levels)


def dressed(text: str, boundary: str, layout: RegionLayout) -> str:
    """``text`` (a Markdown region's render) with the intro line first, its headings at the user's levels and
    none repeating one of the user's; any other text as it is."""
    if not text.strip() or not _BOUNDARY.fullmatch(boundary):
        return text
    shift = 0 if layout.level is None else layout.level - (len(boundary) - 1)
    used = set(layout.taken)
    lines = [_heading(line, shift, used) for line in text.splitlines(keepends=True)]
    return f"{INTRO}\n\n{''.join(lines).lstrip(chr(10))}"


def dressed_boundary(boundary: str, layout: RegionLayout) -> str:
    """The section boundary of a render :func:`dressed` with ``layout``: the heading at the user's level."""
    if layout.level is None or not _BOUNDARY.fullmatch(boundary):
        return boundary
    return "#" * layout.level + " "


def _heading(line: str, shift: int, used: set[tuple[str, ...]]) -> str:
    """One rendered line: a heading moved by ``shift`` levels, renamed if the user's file already has it (a fact
    never starts a line with ``#``: the render escapes it, so every heading here is the template's)."""
    match = _ATX.match(line.rstrip("\r\n")) if line.startswith("#") else None
    if match is None:
        return line
    level = max(1, min(MAX_LEVEL, len(match.group(1)) + shift))
    title = _distinct(match.group(2) or "", used)
    return "#" * level + " " + title + line[len(line.rstrip("\r\n")):]


def _distinct(title: str, used: set[tuple[str, ...]]) -> str:
    """``title``, or with :data:`DISTINCT` (and a number, should even that be taken) if it repeats a heading."""
    candidate, number = title, 1
    while normal_words(candidate) in used and candidate:
        number += 1
        candidate = title + DISTINCT + (f" {number}" if number > 2 else "")
    used.add(normal_words(candidate))
    return candidate
