"""After a forget: the entry out of each host's own memory file (what `persona learn` reads), so the host that saved
the fact stops loading it, and no learn could read it again.

Every entry whose fact is a forgotten text (its normal form, or a journaled hash of it) goes, and nothing else: the
file is rewritten beside itself under a temporary name of ours (:data:`~pipeline.fs.json_scrub.TEMP`, swept by the
next scrub if we are killed) and swapped in with its mode kept, only if it is as it was read; a file another process
holds open, or one that changed meanwhile, is left for the journal to finish (:mod:`.history_journal`), as a host's
history is. With ``keep`` (``--keep-host-histories``) the files are only named.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import PersonaError
from ..fs.json_scrub import Held, Scrubbed
from ..fs.lock import file_lock, lock_path
from ..fs.text_find import Finder, digest
from ..fs.write import fsync_dir
from ..hosts.model import OwnMemory
from ..hosts.registry import HOSTS
from ..interchange.memory_edit import without_entries
from ..text import normal_form
from .learn import memory_files, memory_folder

MAX_BYTES = 16 << 20  # a host's memory file past this is named, not read
LOCK_WAIT_S = 30.0


def scrub_memories(finder: Finder, *, keep: bool, held: Held) -> Iterator[tuple[str, Scrubbed]]:
    """Each host's memory file that held a forgotten entry (host display name, outcome): changed, or with
    ``keep`` only found; or left, and why."""
    for host in HOSTS.values():
        for memory in host.memory:
            yield from ((host.display, outcome) for outcome in _scrub_memory(memory, finder, keep, held))


def _scrub_memory(memory: OwnMemory, finder: Finder, keep: bool, held: Held) -> list[Scrubbed]:
    folder = memory_folder(memory)
    if memory.users_own or not folder.is_dir():  # the user's own words: named by the forget, never edited
        return []
    try:
        with file_lock(lock_path(folder), LOCK_WAIT_S):
            found = [_scrub_file(path, memory.format, finder, keep, held) for path in memory_files(memory)]
    except TimeoutError:
        return [Scrubbed(folder, reason="another persona-tier scrub of this folder is running; `persona scrub` "
                                        "finishes it", retry=True)]
    return [outcome for outcome in found if outcome is not None]


def _dropped(finder: Finder) -> Callable[[str], bool]:
    """Whether an entry's fact is one of the finder's texts: its normal form, or that form's keyed hash."""
    known = {found.normal for found in finder.needles if found.normal}
    hashed = {found.digest for found in finder.needles if found.normal is None}

    def drop(text: str) -> bool:
        normal = normal_form(text)
        return normal in known or (bool(hashed) and digest(finder.key, normal) in hashed)

    return drop


def _scrub_file(path: Path, fmt: str, finder: Finder, keep: bool, held: Held) -> Scrubbed | None:
    try:
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        return Scrubbed(path, reason=f"it cannot be read: {error.strerror or error}", retry=True)
    data = b""
    try:
        before = os.fstat(handle)
        if before.st_size > MAX_BYTES:
            return Scrubbed(path, reason=f"it is larger than {MAX_BYTES >> 20} MB, so it was not read")
        data = os.pread(handle, MAX_BYTES, 0)
        kept, count = without_entries(data.decode("utf-8"), fmt, str(path), _dropped(finder))
    except (OSError, UnicodeDecodeError, PersonaError) as error:
        return _unreadable(path, data, finder, error)
    finally:
        os.close(handle)
    if not count or keep:
        return Scrubbed(path, count) if count else None
    holder = held().get((before.st_dev, before.st_ino))
    if holder is not None:
        return Scrubbed(path, reason=f"a running process (pid {holder}) holds it open; `persona scrub` finishes it "
                                     "once that session has ended", retry=True)
    return _swap(path, before, kept.encode("utf-8"), count)


def _unreadable(path: Path, data: bytes, finder: Finder, error: Exception) -> Scrubbed | None:
    """A file whose entries cannot be told apart (not UTF-8, broken region markers): named only when it may hold
    a forgotten text, as a history's line that cannot be parsed is."""
    found = finder.find(data.decode("utf-8", "replace"), message=False)
    if not (finder.blind or found.spans or found.short_left):
        return None
    return Scrubbed(path, reason=f"it cannot be read as its host writes it: {error}")


def _swap(path: Path, before: os.stat_result, data: bytes, count: int) -> Scrubbed:
    """``data`` in place of ``path``, its mode kept, if the file is still as it was read."""
    temp = path.with_name(f".{path.name}.persona-scrub-{os.urandom(6).hex()}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.fchmod(fd, stat.S_IMODE(before.st_mode))
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        now = os.lstat(path)
        if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
            return Scrubbed(path, reason="it changed while it was read (its host is writing it); `persona scrub` "
                                         "finishes it", retry=True)
        os.replace(temp, path)
    except OSError as error:
        return Scrubbed(path, reason=f"it cannot be replaced: {error.strerror or error}", retry=True)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    fsync_dir(path.parent)
    return Scrubbed(path, count)
