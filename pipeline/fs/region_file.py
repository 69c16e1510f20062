"""Writing a region into a file the user also edits: read, splice, re-check, replace, and never lose their edit."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ..errors import FileSystemError
from .read import describe, read_file, real_path, state_key
from .regions import Place, RegionId, body_text, line_end, own_region, remove, splice
from .write import PRIVATE_FILE, atomic_write_bytes, exchange

log = logging.getLogger(__name__)
ATTEMPTS = 5  # re-reads after a concurrent edit before giving up
# The default of render.max_region_file_bytes (declared here, where it is enforced, and named by the setting):
# instruction files are kilobytes; a bigger one is refused before it costs seconds and a gigabyte to splice.
MAX_REGION_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file's bytes and the state they were read in (None: the file does not exist yet)."""

    data: bytes
    key: tuple[int, int, int, int] | None
    mode: int


@dataclass(frozen=True, slots=True)
class RegionWrite:
    previous: str | None  # our region's text before (None: there was no region)
    written: bool


def region_path(path: Path) -> Path:
    """The file a region target edits: a symlink is followed to its target (a linked ``CLAUDE.md`` in a dotfiles
    repository keeps its link and gets the region), as config edits follow theirs."""
    try:
        return real_path(path)
    except OSError as error:
        raise FileSystemError(f"cannot write the persona region of {path}: it {describe(error)}") from None


def snapshot(path: Path, max_bytes: int = MAX_REGION_FILE_BYTES) -> Snapshot:
    """The file now; a missing file is empty. Anything but a regular file, or a file of more than ``max_bytes``,
    is a FileSystemError."""
    try:
        found = read_file(path, max_bytes, confine_symlinks=False)
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return Snapshot(b"", None, PRIVATE_FILE)
    except OSError as error:
        raise FileSystemError(f"cannot write the persona region of {path}: it {describe(error)}") from None
    if found.truncated:
        raise FileSystemError(f"{path} is larger than {max_bytes} bytes (render.max_region_file_bytes), too large for "
                         "an instruction file; its persona region was neither read nor written")
    return Snapshot(found.data, found.key, mode)


def current_region(path: Path, region: RegionId, max_bytes: int = MAX_REGION_FILE_BYTES) -> str | None:
    """Our region's text in ``path`` now (None if the file or the region does not exist yet)."""
    data = snapshot(path, max_bytes).data
    span = own_region(data, region, str(path))
    return None if span is None else body_text(span.body(data), line_end(data))


def write_region(path: Path, text: str, region: RegionId, *, place: Place = "end",
                 max_bytes: int = MAX_REGION_FILE_BYTES,
                 before_replace: Callable[[], None] | None = None) -> RegionWrite:
    """Put ``text`` in our region of ``path``, changing no byte outside it; call with the file's lock held.

    The file is read and spliced, the result written to a temp file and
    synced, and only then is the file looked at again, right before the temp
    file takes its place, in an exchange that tells exactly which file it
    displaced (see :func:`_swap_if_unchanged`): if anything changed meanwhile
    (an editor saved), the user's file stays or is given back, and the splice
    is redone on the new bytes, up to :data:`ATTEMPTS` times, then refused.
    Nothing is written when the region already holds ``text``, so the mtime
    stays. A file of more than ``max_bytes`` is refused
    unread. ``before_replace`` runs once the temp file is synced, just before
    the re-check (a test uses it to edit the file from another process at
    exactly that moment).
    """
    return _apply(path, lambda data: splice(data, text, region, str(path), place=place), region, max_bytes,
                  before_replace)


def remove_region(path: Path, region: RegionId, max_bytes: int = MAX_REGION_FILE_BYTES) -> bool:
    """Take our region out of ``path`` (the exact inverse of adding it); whether anything was removed."""
    if not path.exists():
        return False
    return _apply(path, lambda data: remove(data, region, str(path)), region, max_bytes, None).written


def _apply(path: Path, change: Callable[[bytes], bytes], region: RegionId, max_bytes: int,
           before_replace: Callable[[], None] | None) -> RegionWrite:
    for _ in range(ATTEMPTS):
        seen = snapshot(path, max_bytes)
        span = own_region(seen.data, region, str(path))
        previous = None if span is None else body_text(span.body(seen.data), line_end(seen.data))
        new = change(seen.data)
        if new == seen.data:
            return RegionWrite(previous, written=False)
        swap = partial(_swap_if_unchanged, seen=seen, max_bytes=max_bytes, before_replace=before_replace)
        if atomic_write_bytes(path, new, mode=seen.mode, swap=swap):
            return RegionWrite(previous, written=True)
        log.info("%s changed while its persona region was written; reading it again", path)
    raise FileSystemError(f"{path} kept changing while its persona region was written ({ATTEMPTS} tries); nothing was "
                     "written, and the next render tries again")


def _swap_if_unchanged(temp: Path, path: Path, *, seen: Snapshot, max_bytes: int,
                       before_replace: Callable[[], None] | None) -> bool:
    """Put the synced temp file in ``path``'s place only if what it displaces is what was read as ``seen``.

    A last look comes first. Then the two names are exchanged in one step, so
    the file displaced is known exactly: if a save landed between the look and
    the exchange it is given back at once (unless another save already came on
    top of ours), and the splice is redone. Where names cannot be exchanged, a
    rename follows the last look; a file that did not exist is only created.
    """
    if before_replace is not None:
        before_replace()
    if not _unchanged(path, seen, max_bytes):
        return False
    if seen.key is None:
        return _create(temp, path)
    ours = os.stat(temp).st_ino
    try:
        if not exchange(temp, path):
            os.replace(temp, path)
            return True
    except FileNotFoundError:  # the user deleted it meanwhile
        return False
    if _same_bytes(temp, seen, max_bytes):
        return True
    if os.stat(path).st_ino == ours:
        exchange(temp, path)  # the save that came in between goes back where it was
    return False


def _create(temp: Path, path: Path) -> bool:
    """Make ``temp`` the new file ``path``, unless one appeared meanwhile."""
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    return True


def _same_bytes(displaced: Path, seen: Snapshot, max_bytes: int) -> bool:
    """Whether the file an exchange displaced is the one read as ``seen``: its inode first (one stat, so a save
    by rename is given back within microseconds), then its bytes (a rename has changed its ctime)."""
    assert seen.key is not None
    try:
        if os.stat(displaced).st_ino != seen.key[2]:
            return False
        return snapshot(displaced, max_bytes).data == seen.data
    except (OSError, FileSystemError):
        return False


def _unchanged(path: Path, seen: Snapshot, max_bytes: int) -> bool:
    """Whether ``path`` still holds what was read as ``seen``: the same bytes (a timestamp may not tick between
    two saves), and then, by one stat, still the same file (an editor's save during that read)."""
    try:
        if snapshot(path, max_bytes) != seen:
            return False
        return state_key(os.stat(path)) == seen.key
    except FileNotFoundError:
        return seen.key is None
    except FileSystemError:  # it grew past the bound, or became something else: it changed
        return False
