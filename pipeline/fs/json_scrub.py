"""Taking a text out of another program's JSON or JSON Lines file (a host's transcript), every other byte kept.

Only JSON string values change: in each one that holds the text (as stored, or JSON-escaped once more, as
a tool call's arguments hold it), each occurrence becomes a fixed marker. The string's own bytes are
edited where the text's escaped form stands in them; a string escaped some other way (``\\u0041`` for
``A``) is written again whole, in its own ASCII-or-not style. The file is swapped atomically and keeps its
mode. A file another process holds open (a host's running session, which would go on writing to the
replaced file and lose what it writes) or that changed while we read it is left alone, and the caller says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .write import atomic_write_bytes

MARKER = "[forgotten]"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


@dataclass(frozen=True)
class Scrubbed:
    """One file's outcome: how many times the text was replaced, or why the file was left as it was."""

    path: Path
    replaced: int = 0
    reason: str = ""  # set: the file holds the text and could not be changed safely


class Needles:
    """The text's forms, and how to find them in a decoded string and in a string's raw JSON bytes."""

    def __init__(self, forms: Iterable[str]) -> None:
        self.forms = sorted({form for form in forms if form.strip()}, key=len, reverse=True)
        raw = {escaped for form in self.forms for escaped in _escaped(form)}
        self.decoded = _pattern(self.forms)
        self.raw = _pattern(sorted(raw, key=len, reverse=True))
        self.probes = [form.encode("utf-8") for form in {*self.forms, *raw}]

    def in_bytes(self, data: bytes) -> bool:
        """Whether ``data`` may hold the text at all (a quick look before any parsing)."""
        return bool(self.forms) and any(probe in data for probe in self.probes)


def _escaped(form: str) -> set[str]:
    """``form`` as it stands inside a JSON string, in either ASCII style."""
    return {json.dumps(form, ensure_ascii=ascii_only)[1:-1] for ascii_only in (False, True)}


def _pattern(forms: list[str]) -> re.Pattern[str] | None:
    """A match for any of ``forms`` that is not part of a longer word (``Go`` is not taken out of ``Google``)."""
    if not forms:
        return None
    pieces = [(r"(?<!\w)" if form[0].isalnum() or form[0] == "_" else "") + re.escape(form)
              + (r"(?!\w)" if form[-1].isalnum() or form[-1] == "_" else "") for form in forms]
    return re.compile("|".join(pieces))


def scrub_text(text: str, needles: Needles, *, lines: bool) -> tuple[str, int]:
    """``text`` (one JSON document, or JSON Lines) with the text replaced in its string values; the count.
    ValueError, naming the line, when it is not valid JSON."""
    _check(text, lines=lines)
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        new, found = _scrub_string(match.group(0), needles)
        count += found
        return new
    return _STRING.sub(replace, text), count


def _check(text: str, *, lines: bool) -> None:
    documents = text.split("\n") if lines else [text]  # not splitlines: a string may hold U+2028 as it is
    for number, document in enumerate(documents, 1):
        if lines and not document.strip():
            continue
        try:
            json.loads(document)
        except ValueError:
            raise ValueError(f"line {number} is not JSON" if lines else "it is not JSON") from None


def _scrub_string(token: str, needles: Needles) -> tuple[str, int]:
    """One JSON string token (quotes included) with the text replaced, and how many times."""
    assert needles.decoded is not None and needles.raw is not None
    value = json.loads(token)
    want, count = needles.decoded.subn(MARKER, value)
    if not count:
        return token, 0
    edited = token[0] + needles.raw.sub(lambda m: _unescaped_at(token, m), token[1:-1]) + token[-1]
    try:
        if json.loads(edited) == want:
            return edited, count
    except ValueError:
        pass
    return json.dumps(want, ensure_ascii=token.isascii()), count


def _unescaped_at(token: str, match: re.Match[str]) -> str:
    """The marker, unless the match starts right after a backslash (it is then part of an escape)."""
    start = match.start() + 1  # the match ran over token[1:-1]
    backslashes = len(token[:start]) - len(token[:start].rstrip("\\"))
    return match.group(0) if backslashes % 2 else MARKER


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


def scrub_file(path: Path, needles: Needles, *, max_bytes: int, dry_run: bool = False,
               held: Callable[[], dict[tuple[int, int], int]] | None = None) -> Scrubbed | None:
    """Replace the text in one JSON (``.json``) or JSON Lines file, swapping it atomically with its mode kept;
    None when the file does not hold it. ``dry_run``: only say whether it does. ``held``: the files other
    processes hold open (:func:`open_files`, asked only when a file is to be replaced), left as they are."""
    try:
        before = os.lstat(path)
        if stat.S_ISLNK(before.st_mode):
            return _if_holding(path, needles, max_bytes, "a symbolic link: persona-tier rewrites only plain files")
        if before.st_size > max_bytes:
            return Scrubbed(path, reason=f"larger than {max_bytes} bytes (injection.max_file_bytes)")
        data = path.read_bytes()
    except OSError as error:
        return Scrubbed(path, reason=f"cannot be read: {error.strerror or error}")
    if not needles.in_bytes(data):
        return None
    try:
        text, count = scrub_text(data.decode("utf-8"), needles, lines=path.suffix != ".json")
    except UnicodeDecodeError:
        return Scrubbed(path, reason="it is not UTF-8")
    except ValueError as error:
        return Scrubbed(path, reason=f"{error}, so the text cannot be found in its strings safely")
    if not count or dry_run:
        return Scrubbed(path, count) if count else None
    holder = (held() if held else {}).get((before.st_dev, before.st_ino))
    if holder is not None:
        return Scrubbed(path, reason=f"a running process (pid {holder}) holds it open, so a replaced file would lose "
                                     "what it writes next; run the forget again once that session has ended")
    return _swap(path, before, text.encode("utf-8"), count)


def _if_holding(path: Path, needles: Needles, max_bytes: int, reason: str) -> Scrubbed | None:
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes)
    except OSError:
        return None
    return Scrubbed(path, reason=reason) if needles.in_bytes(data) else None


def _swap(path: Path, before: os.stat_result, data: bytes, count: int) -> Scrubbed:
    def unchanged_then_rename(temp: Path, target: Path) -> bool:
        now = os.lstat(target)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
            return False
        os.replace(temp, target)
        return True
    try:
        placed = atomic_write_bytes(path, data, mode=stat.S_IMODE(before.st_mode), swap=unchanged_then_rename)
    except OSError as error:
        return Scrubbed(path, reason=f"cannot be replaced: {error.strerror or error}")
    if not placed:
        return Scrubbed(path, reason="it changed while it was read (its host is writing it); run the forget "
                                     "again once that session has ended")
    return Scrubbed(path, count)


def holds(path: Path, needles: Needles, *, chunk: int = 1 << 20) -> bool:
    """Whether a file another program owns (a database) holds the text anywhere in its bytes, read in chunks."""
    overlap = max((len(probe) for probe in needles.probes), default=1) - 1
    tail = b""
    try:
        with path.open("rb") as handle:
            while block := handle.read(chunk):
                if needles.in_bytes(tail + block):
                    return True
                tail = (tail + block)[-overlap:] if overlap else b""
    except OSError:
        return False
    return False
