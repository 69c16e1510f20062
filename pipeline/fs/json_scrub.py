"""Taking a text out of one history file of a host's (JSON Lines, or one JSON document), every other byte kept.

A JSON Lines file is read in blocks of whole lines, so memory stays bounded whatever its size; a block the quick
look (:mod:`.json_probe`) clears is never parsed, and a line that may hold the text is parsed and edited in its text
fields only (:mod:`.json_text`). A line that cannot be parsed (not JSON, not UTF-8, nested past the bound, longer
than :data:`LINE_MAX`) is left as it was and, when it may hold the text, named; every other line is still scrubbed.

The new file is written beside the old one under a temporary name of ours (swept by the next run if we are killed),
then swapped in with its mode kept, only if the file is as it was read. A host that appended meanwhile (its session
went on) has its new lines read and scrubbed too before the swap; a file another process holds open (a running
session would go on writing into the replaced inode) is left, and so is one that kept changing: the caller says so,
and its journal finishes the job later.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .bounded_json import JsonTooDeep
from .json_probe import Probe
from .json_text import Roles, edits, parse
from .text_find import MARKER, Finder
from .write import fsync_dir

BLOCK = 4 << 20  # bytes read at a time
LINE_MAX = 64 << 20  # a longer line is not parsed (named, when it may hold the text)
OVERLAP = 64 << 10  # of such a line, the bytes read again with the next piece: a text never straddles unseen
CATCH_UP = 5  # times the lines a host appended while we read are read in turn before the file is left
TEMP = re.compile(r"^\..+\.persona-scrub-[0-9a-f]{12}$")  # our temporary files: the next run sweeps what a kill left
Held = Callable[[], dict[tuple[int, int], int]]


@dataclass
class Scrubbed:
    """One file's outcome: the text replaced how many times; or, left, why, and whether a later run can finish it
    (``retry``: a writer, a lock, a full disk) or it needs a person (``reason`` says what)."""

    path: Path
    replaced: int = 0
    reason: str = ""
    retry: bool = False
    short: bool = False  # a short fact stands in it where it is not replaced (named, with why)
    moved: list[tuple[int, int]] = field(default_factory=list)  # (old offset, bytes added) of each edit

    def shift(self, offset: int) -> int:
        """Where a byte offset of the old file stands in the new one (a host's index of its lines follows it)."""
        return offset + sum(delta for at, delta in self.moved if at < offset)


@dataclass
class _Scan:
    spans: list[tuple[int, int]] = field(default_factory=list)  # byte spans of the file to become the marker
    bad: list[tuple[int, str]] = field(default_factory=list)  # (byte offset of a line, or -1 for the file: why it
    # may hold the text and could not be parsed); the line's number is counted only when one is named
    short: bool = False
    end: int = 0  # bytes read


class _Lines:
    """Reads a JSON Lines file's lines that may hold the text, and finds the edits in each."""

    def __init__(self, probe: Probe, finder: Finder, roles: Roles) -> None:
        self.probe, self.finder, self.roles = probe, finder, roles

    def scan(self, handle: int, start: int, scan: _Scan) -> _Scan:
        """Read from byte ``start`` to the end, adding to ``scan``. Each read starts at a line's start and is looked
        at in place: a line the read cut is read again, whole, by the next one (never joined by a copy)."""
        at, size = start, BLOCK
        while block := os.pread(handle, size, at):
            cut = len(block) if len(block) < size else block.rfind(b"\n") + 1  # the end: a last line without \n
            if cut:
                self._block(block, at, scan, cut)
                at, size = at + cut, BLOCK
            elif size <= LINE_MAX:  # one line fills the read: read it whole, up to the bound
                size = min(size * 2, LINE_MAX + 1)
            else:  # a line longer than the bound: not parsed, skipped to its end
                at, size = self._skip(handle, at, block, scan), BLOCK
        scan.end = at
        return scan

    def _skip(self, handle: int, at: int, head: bytes, scan: _Scan) -> int:
        """Skip the overlong line at ``at`` (``head``: its first bytes), named when it may hold the text (looked at
        piece by piece, each with the end of the one before: a text that straddles two reads is seen whole); the
        offset after it."""
        holds, tail, offset = self.probe.may_hold(head), head[-OVERLAP:], at + len(head)
        while piece := os.pread(handle, BLOCK, offset):
            newline = piece.find(b"\n")
            seen = tail + (piece if newline < 0 else piece[:newline])
            holds = holds or self.probe.may_hold(seen)
            if newline >= 0:
                offset += newline + 1
                break
            tail, offset = seen[-OVERLAP:], offset + len(piece)
        if holds:
            scan.bad.append((at, f"is longer than {LINE_MAX >> 20} MB, so it was not read"))
        return offset

    def _block(self, block: bytes, at: int, scan: _Scan, cut: int) -> None:
        """The lines of ``block`` that end before ``cut``."""
        for start, end in self.probe.lines(block):
            if start < cut:
                self.line(block[start:end], at + start, scan)

    def line(self, line: bytes, at: int, scan: _Scan, whole: bool = False) -> None:
        """Find the edits in one JSON text starting at byte ``at`` (``whole``: the file's one document)."""
        where = -1 if whole else at
        try:
            text = line.decode("utf-8")
            found = edits(text, parse(text), self.roles, self.finder)
        except UnicodeDecodeError:
            scan.bad.append((where, "is not UTF-8"))
            return
        except JsonTooDeep as error:
            scan.bad.append((where, f"is {error.msg}"))
            return
        except (ValueError, RecursionError):
            scan.bad.append((where, "is not JSON"))
            return
        scan.short |= found.short_left
        scan.spans += _byte_spans(text, found.spans, at)


def _byte_spans(text: str, spans: list[tuple[int, int]], at: int) -> list[tuple[int, int]]:
    """Character spans of ``text`` as byte spans of the file, ``text`` starting at byte ``at``."""
    if text.isascii():
        return [(at + start, at + end) for start, end in spans]
    out, chars, offset = [], 0, at
    for start, end in spans:
        offset += len(text[chars:start].encode("utf-8"))
        width = len(text[start:end].encode("utf-8"))
        out.append((offset, offset + width))
        offset, chars = offset + width, end
    return out


def scrub_file(path: Path, probe: Probe, finder: Finder, roles: Roles, *, dry_run: bool = False,
               held: Held | None = None, max_bytes: int = LINE_MAX) -> Scrubbed | None:
    """Replace the texts in one history file (JSON Lines, or one JSON document when its name ends ``.json``);
    None when it holds none of them. ``dry_run``: only say whether it does. ``held``: the files other processes
    hold open (asked only when a file is to change); ``max_bytes``: the largest JSON document read whole."""
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        return Scrubbed(path, reason=_why(error), retry=True)
    try:
        return _scrub_open(path, handle, probe, finder, roles, dry_run, held, max_bytes)
    except OSError as error:
        return Scrubbed(path, reason=_why(error), retry=True)
    finally:
        os.close(handle)


def _scrub_open(path: Path, handle: int, probe: Probe, finder: Finder, roles: Roles, dry_run: bool,
                held: Held | None, max_bytes: int) -> Scrubbed | None:
    before = os.fstat(handle)
    if not stat.S_ISREG(before.st_mode):
        return None
    if path.suffix == ".json":
        scan = _document(handle, before.st_size, probe, finder, roles, max_bytes)
    else:
        scan = _Lines(probe, finder, roles).scan(handle, 0, _Scan())
    if not scan.spans:
        return _unchanged(path, handle, scan)
    if dry_run:
        return Scrubbed(path, len(scan.spans), _reasons(handle, scan), short=scan.short)
    holder = (held() if held else {}).get((before.st_dev, before.st_ino))
    if holder is not None:
        return Scrubbed(path, reason=f"a running process (pid {holder}) holds it open, so a replaced file would "
                                     "lose what it writes next; `persona scrub` finishes it once that session has "
                                     "ended", retry=True)
    return _rewrite(path, handle, before, scan, _Lines(probe, finder, roles), path.suffix == ".json")


def _unchanged(path: Path, handle: int, scan: _Scan) -> Scrubbed | None:
    if scan.bad or scan.short:
        return Scrubbed(path, reason=_reasons(handle, scan), short=scan.short)
    return None


def _reasons(handle: int, scan: _Scan) -> str:
    """Each line left, by its number (counted now: the file is read again up to it), with why."""
    named, lines, read = [], 1, 0
    for at, why in sorted(scan.bad):
        if at < 0:
            named.append(f"it {why}")
            continue
        while read < at:
            block = os.pread(handle, min(BLOCK, at - read), read)
            if not block:
                break
            lines, read = lines + block.count(b"\n"), read + len(block)
        named.append(f"line {lines} {why}")
    return "; ".join(named)


def _document(handle: int, size: int, probe: Probe, finder: Finder, roles: Roles, max_bytes: int) -> _Scan:
    """One JSON document, read whole (up to ``max_bytes``)."""
    scan = _Scan(end=size)
    data = os.pread(handle, max_bytes + 1, 0) if size <= max_bytes else b""
    if size > max_bytes:
        scan.bad.append((-1, f"is larger than {max_bytes >> 20} MB, so it was not read"))
        return scan
    if not probe.may_hold(data):
        return scan
    _Lines(probe, finder, roles).line(data, 0, scan, whole=True)
    return scan


def _rewrite(path: Path, handle: int, before: os.stat_result, scan: _Scan, lines: _Lines,
             whole: bool) -> Scrubbed:
    """Write the scrubbed copy beside ``path`` and swap it in if the file is as read (lines a host appended
    meanwhile are read and copied too); else leave it."""
    temp = path.with_name(f".{path.name}.persona-scrub-{os.urandom(6).hex()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.fchmod(fd, stat.S_IMODE(before.st_mode))
        copied = _copy(handle, fd, scan.spans, 0, scan.end)
        done = _catch_up(path, handle, fd, before, scan, lines, copied, whole)
        if done is None:
            return Scrubbed(path, reason="it kept changing while it was read (its host is writing it); "
                                         "`persona scrub` finishes it once that session has ended", retry=True)
        os.fsync(fd)
        os.replace(temp, path)
    except OSError as error:
        return Scrubbed(path, reason=_why(error), retry=True)
    finally:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    fsync_dir(path.parent)
    moved = [(start, len(MARKER) - (end - start)) for start, end in scan.spans]
    reason = _reasons(handle, scan)
    return Scrubbed(path, len(scan.spans), reason, short=scan.short, moved=moved)


def _catch_up(path: Path, handle: int, fd: int, before: os.stat_result, scan: _Scan, lines: _Lines, copied: int,
              whole: bool) -> int | None:
    """Copy what a host appended after the scan (its lines scrubbed too) until the file stands still; None when it
    was replaced or cut instead, or kept growing."""
    seen = before
    for _ in range(CATCH_UP):
        now = os.lstat(path)
        if (now.st_ino, now.st_size, now.st_mtime_ns) == (seen.st_ino, scan.end, seen.st_mtime_ns):
            return copied
        if now.st_ino != before.st_ino or now.st_size < scan.end or whole:
            return None
        start, count = scan.end, len(scan.spans)
        lines.scan(handle, start, scan)
        copied = _copy(handle, fd, scan.spans[count:], start, scan.end)
        seen = now
    return None


def _copy(handle: int, fd: int, spans: list[tuple[int, int]], start: int, end: int) -> int:
    """Copy bytes ``start``-``end`` of ``handle`` to ``fd``, each span replaced by the marker."""
    at = start
    for span_start, span_end in [*spans, (end, end)]:
        while at < span_start:
            block = os.pread(handle, min(BLOCK, span_start - at), at)
            if not block:
                raise OSError("the file was cut while it was copied")
            _write_all(fd, block)
            at += len(block)
        if span_end > span_start:
            _write_all(fd, MARKER.encode("ascii"))
            at = span_end
    return at


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _why(error: OSError) -> str:
    return f"it cannot be read or replaced: {error.strerror or error}"


def sweep_temps(folder: Path) -> int:
    """Remove the temporary files a killed scrub left in ``folder`` (ours only, by their name)."""
    removed = 0
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if TEMP.match(entry.name) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed += 1
    return removed


def open_files() -> dict[tuple[int, int], int]:
    """(device, inode) -> the id of a process (not this one) that holds the file open, read from /proc (Linux;
    elsewhere nothing is known). Only the processes this user may look into are seen: the user's own hosts."""
    found: dict[tuple[int, int], int] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdecimal() and int(entry.name) != os.getpid():
                found.update(dict.fromkeys(_held_by(entry.path), int(entry.name)))
    return found


def _held_by(process: str) -> list[tuple[int, int]]:
    held = []
    with contextlib.suppress(OSError):
        for fd in os.scandir(f"{process}/fd"):
            with contextlib.suppress(OSError):
                info = os.stat(fd.path)
                if stat.S_ISREG(info.st_mode):
                    held.append((info.st_dev, info.st_ino))
    return held
