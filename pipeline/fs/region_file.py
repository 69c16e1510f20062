"""Writing a region into a file the user also edits: read, splice, re-check, replace, and never lose their edit."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import StageError
from .read import describe, read_file, real_path
from .regions import Place, RegionId, body_text, line_end, own_region, remove, splice
from .write import PRIVATE_FILE, atomic_write_bytes

log = logging.getLogger(__name__)
ATTEMPTS = 5  # re-reads after a concurrent edit before giving up


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
        raise StageError(f"cannot write the persona region of {path}: it {describe(error)}") from None


def snapshot(path: Path) -> Snapshot:
    """The file now; a missing file is empty. Anything but a regular file is a StageError."""
    try:
        found = read_file(path, None, confine_symlinks=False)
        return Snapshot(found.data, found.key, os.stat(path).st_mode & 0o7777)
    except FileNotFoundError:
        return Snapshot(b"", None, PRIVATE_FILE)
    except OSError as error:
        raise StageError(f"cannot write the persona region of {path}: it {describe(error)}") from None


def current_region(path: Path, region: RegionId) -> str | None:
    """Our region's text in ``path`` now (None if the file or the region does not exist yet)."""
    data = snapshot(path).data
    span = own_region(data, region, str(path))
    return None if span is None else body_text(span.body(data), line_end(data))


def write_region(path: Path, text: str, region: RegionId, *, place: Place = "end",
                 before_replace: Callable[[], None] | None = None) -> RegionWrite:
    """Put ``text`` in our region of ``path``, changing no byte outside it; call with the file's lock held.

    The file is read, spliced, then read again just before the atomic
    replace: if anything changed meanwhile (an editor saved), the splice is
    redone on the new bytes, up to :data:`ATTEMPTS` times, then refused.
    Nothing is written when the region already holds ``text``, so the mtime
    stays. ``before_replace`` runs between each read and its re-check (a test
    uses it to edit the file from another process at exactly that moment).
    """
    return _apply(path, lambda data: splice(data, text, region, str(path), place=place), region, before_replace)


def remove_region(path: Path, region: RegionId) -> bool:
    """Take our region out of ``path`` (the exact inverse of adding it); whether anything was removed."""
    if not path.exists():
        return False
    return _apply(path, lambda data: remove(data, region, str(path)), region, None).written


def _apply(path: Path, change: Callable[[bytes], bytes], region: RegionId,
           before_replace: Callable[[], None] | None) -> RegionWrite:
    for _ in range(ATTEMPTS):
        seen = snapshot(path)
        span = own_region(seen.data, region, str(path))
        previous = None if span is None else body_text(span.body(seen.data), line_end(seen.data))
        new = change(seen.data)
        if new == seen.data:
            return RegionWrite(previous, written=False)
        if before_replace is not None:
            before_replace()
        if snapshot(path) != seen:
            log.info("%s changed while its persona region was written; reading it again", path)
            continue
        atomic_write_bytes(path, new, mode=seen.mode)
        return RegionWrite(previous, written=True)
    raise StageError(f"{path} kept changing while its persona region was written ({ATTEMPTS} tries); nothing was "
                     "written, and the next render tries again")
