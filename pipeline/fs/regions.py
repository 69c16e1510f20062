"""Managed regions: our text between two marker lines in a file the user owns, spliced byte for byte.

A region is::

    <!-- persona-tier:begin profile=alice -->
    ...the rendered persona...
    <!-- persona-tier:end profile=alice -->

(``region=NAME`` follows the profile when the target names one). Everything
here works on bytes: every byte outside the region (a BOM, CRLF line ends,
a missing final newline, bytes that are not UTF-8) is kept exactly as it was,
because the only bytes we ever change lie between our two marker lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..errors import FileSystemError

BOM = b"\xef\xbb\xbf"
# What every marker line holds; rendered text that held it would be read as a marker (and refuse the file).
MARKER_WORD = "persona-tier:"
# The same word with a non-breaking hyphen (U+2011): it reads the same, and no marker is made of it.
DEFUSED_WORD = "persona\u2011tier:"
Place = Literal["end", "start"]
_MARKER = re.compile(rb"^(?:\xef\xbb\xbf)?[ \t]*<!--[ \t]*persona-tier:(begin|end)\b(.*?)-->[ \t]*\r?\n?$")
_PAIR = re.compile(r"([a-z]+)=(\S+)")
REGION_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True, slots=True)
class RegionId:
    """Whose region: the profile (as its file-name-safe slug) and the target's region name, if it has one."""

    profile: str
    name: str | None = None

    def attributes(self) -> str:
        return f"profile={self.profile}" + (f" region={self.name}" if self.name else "")

    def begin(self) -> bytes:
        return f"<!-- persona-tier:begin {self.attributes()} -->".encode("ascii")

    def end(self) -> bytes:
        return f"<!-- persona-tier:end {self.attributes()} -->".encode("ascii")


@dataclass(frozen=True, slots=True)
class Span:
    """One complete region in a file: byte offsets of its begin line, its body, and the end of its end line."""

    id: RegionId
    begin_line: int  # 1-based, for messages
    start: int  # first byte of the begin marker line
    body_start: int  # first byte after the begin marker line
    body_end: int  # first byte of the end marker line
    stop: int  # first byte after the end marker line

    def body(self, data: bytes) -> bytes:
        return data[self.body_start:self.body_end]


@dataclass(frozen=True, slots=True)
class _Marker:
    kind: str
    id: RegionId | None  # None: a bare end, which closes whatever is open
    line: int
    start: int
    stop: int


def find_regions(data: bytes, where: str) -> list[Span]:
    """Every region in ``data``, or a FileSystemError naming ``where`` and the line of the first broken marker."""
    spans: list[Span] = []
    opened: _Marker | None = None
    for marker in _markers(data, where):
        if marker.kind == "begin":
            if opened is not None:
                raise _broken(where, marker.line, f"a region begins inside the one begun at line {opened.line} "
                              "(nested markers)")
            opened = marker
            continue
        if opened is None:
            raise _broken(where, marker.line, "a region ends that never began (an end marker without a begin)")
        if marker.id is not None and marker.id != opened.id:
            raise _broken(where, marker.line, f"this end marker ({marker.id.attributes()}) does not close the "
                          f"region begun at line {opened.line} ({_attrs(opened)})")
        assert opened.id is not None  # a begin always has one
        spans.append(Span(opened.id, opened.line, opened.start, opened.stop, marker.start, marker.stop))
        opened = None
    if opened is not None:
        raise _broken(where, opened.line, "a region begins but never ends (a begin marker without an end)")
    _no_duplicates(spans, where)
    return spans


def defuse(text: str) -> str:
    """``text`` with every ``persona-tier:`` spelled with a non-breaking hyphen: it reads the same, and can
    never form or break a marker."""
    return text.replace(MARKER_WORD, DEFUSED_WORD)


def _markers(data: bytes, where: str) -> list[_Marker]:
    found: list[_Marker] = []
    offset = 0
    for number, line in enumerate(_lines(data), start=1):
        if b"persona-tier:" in line:
            match = _MARKER.match(line)
            start = offset + (len(BOM) if match and line.startswith(BOM) else 0)  # a BOM stays the user's
            if match is None and _inside(found):
                # Text inside a region is ours, rendered before facts were defused: the next write replaces it.
                offset += len(line)
                continue
            if match is None:
                raise _broken(where, number, "a persona-tier marker must stand alone on its line, as "
                              "<!-- persona-tier:begin profile=NAME --> or <!-- persona-tier:end profile=NAME -->")
            found.append(_Marker(match.group(1).decode(), _parse_id(match.group(2), where, number), number,
                                 start, offset + len(line)))
        offset += len(line)
    for marker in found:
        if marker.kind == "begin" and marker.id is None:
            raise _broken(where, marker.line, "a begin marker must name its profile (profile=NAME)")
    return found


def _inside(found: list[_Marker]) -> bool:
    return bool(found) and found[-1].kind == "begin"


def _lines(data: bytes) -> list[bytes]:
    """Lines as editors number them: split after each LF only (a lone CR is text)."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _parse_id(raw: bytes, where: str, line: int) -> RegionId | None:
    try:
        text = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise _broken(where, line, "a persona-tier marker holds bytes that are not ASCII") from None
    pairs = dict(_PAIR.findall(text))
    if _PAIR.sub("", text).strip() or set(pairs) - {"profile", "region"}:
        raise _broken(where, line, f"unreadable persona-tier marker attributes {text!r} (expected profile=NAME "
                      "and optionally region=NAME)")
    if not pairs:
        return None
    if "profile" not in pairs:
        raise _broken(where, line, "a persona-tier marker must name its profile (profile=NAME)")
    return RegionId(pairs["profile"], pairs.get("region"))


def _no_duplicates(spans: list[Span], where: str) -> None:
    seen: dict[RegionId, int] = {}
    for span in spans:
        if span.id in seen:
            raise _broken(where, span.begin_line, f"the region {span.id.attributes()} appears twice (it also "
                          f"begins at line {seen[span.id]}); delete one of them")
        seen[span.id] = span.begin_line


def _attrs(marker: _Marker) -> str:
    return marker.id.attributes() if marker.id else "no attributes"


def _broken(where: str, line: int, why: str) -> FileSystemError:
    return FileSystemError(f"{where}, line {line}: {why}; nothing was written")


def own_region(data: bytes, region: RegionId, where: str) -> Span | None:
    """Our region in ``data`` (None if there is none yet). Markers of another profile refuse the file: it belongs
    to one profile, as a whole-file target does."""
    spans = find_regions(data, where)
    for span in spans:
        if span.id.profile != region.profile:
            raise _broken(where, span.begin_line, f"this file holds a region of profile {span.id.profile!r}, not "
                          f"{region.profile!r}; a file belongs to one profile (put {{profile}} in the path)")
    return next((span for span in spans if span.id == region), None)


def line_end(data: bytes) -> bytes:
    """The file's own line ending: CRLF if its first line ends so, else LF."""
    first = data.find(b"\n")
    return b"\r\n" if first > 0 and data[first - 1:first] == b"\r" else b"\n"


def region_body(text: str, eol: bytes) -> bytes:
    """The rendered text as a region's body: UTF-8, in the file's line endings, ending with a line break."""
    body = defuse(text.replace("\r\n", "\n")).encode("utf-8")  # a template's own text is defused too
    if body and not body.endswith(b"\n"):
        body += b"\n"
    return body.replace(b"\n", eol) if eol != b"\n" else body


def body_text(body: bytes, eol: bytes) -> str:
    """A region's body as the text that was rendered into it (the inverse of :func:`region_body`)."""
    data = body.replace(b"\r\n", b"\n") if eol == b"\r\n" else body
    return data.decode("utf-8", errors="replace")


def splice(data: bytes, text: str, region: RegionId, where: str, *, place: Place = "end") -> bytes:
    """``data`` with our region holding ``text``: replaced between its markers, or added at ``place`` once."""
    eol = line_end(data)
    span = own_region(data, region, where)
    body = region_body(text, eol)
    if span is not None:
        return data[:span.body_start] + body + data[span.body_end:]
    block = region.begin() + eol + body + region.end()
    if place == "start":
        head = _title_end(data, eol)
        return data[:head] + block + eol + (eol if data[head:] else b"") + data[head:]
    if not data:
        return block + eol
    if data.endswith(b"\n"):
        return data + eol + block + eol
    return data + eol + eol + block  # the file ended without a line break, and so does it still


def _title_end(data: bytes, eol: bytes) -> int:
    """Where a region added at the start goes: after the byte-order mark, and after the user's own title (a first
    line ``# Title``) with the blank line under it, so the file still opens with the user's title."""
    head = len(BOM) if data.startswith(BOM) else 0
    if not data.startswith(b"# ", head):
        return head
    line = data.find(eol, head)
    if line < 0:
        return head
    head = line + len(eol)
    return head + len(eol) if data.startswith(eol, head) else head


def remove(data: bytes, region: RegionId, where: str) -> bytes:
    """``data`` without our region: the exact inverse of :func:`splice` adding it, when nothing else moved."""
    span = own_region(data, region, where)
    if span is None:
        return data
    eol = line_end(data)
    before, after = data[:span.start], data[span.stop:]
    if not after:  # added at the end: drop the blank line we put before it
        if before.endswith(eol + eol):
            before = before[:-len(eol)]
        if not data.endswith(b"\n") and before.endswith(eol):
            before = before[:-len(eol)]
        return before
    head = len(BOM) if before == BOM else 0
    if len(before) == head or not before.endswith(eol + eol):  # added at the start: drop the blank line after it
        return before + (after[len(eol):] if after.startswith(eol) else after)
    # Added at the end, and the user wrote on after it: drop the blank line we put before it.
    return before[:-len(eol)] + after
