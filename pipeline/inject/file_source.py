"""A file target's capped text: the file read defensively, capped for injection.

The injector and the session snapshots both read a target through a source
(this one, or :mod:`pipeline.inject.store_source` for a block in the
database): the same reader, the same size bound, the same cap.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import caches
from ..clock import Throttle
from ..config.targets import ResolvedTarget
from ..errors import FileSystemError, PersonaError
from ..fs.locations import profile_slug
from ..fs.read import FileRead, describe, read_file
from ..fs.regions import RegionId, body_text, line_end, own_region
from ..warn_once import ProblemLog
from .capped import cap_block, decoded

if TYPE_CHECKING:  # `persona status` runs without pydantic
    from ..config.schema import Settings


def block_of(found: FileRead, target: ResolvedTarget, *, counter: str, max_bytes: int, problems: ProblemLog,
             known_tokens: int | None = None) -> str:
    """The capped block of a file already read; ``known_tokens`` is its exact count, when a render recorded it.

    For a region target only our region is the block: the user's own text
    around it is theirs, and their host reads it anyway.
    """
    data = region_of(found.data, target) if target.output == "region" else found.data
    text = decoded(data, found.truncated, f"persona file {target.path}", max_bytes, problems)
    return cap_block(text, target, counter, known_tokens=None if found.truncated else known_tokens)


def region_of(data: bytes, target: ResolvedTarget) -> bytes:
    """The bytes of ``target``'s own region in ``data`` (LF line ends, as rendered); FileSystemError if it has none."""
    region = RegionId(profile_slug(target.profile), target.region)
    span = own_region(data, region, f"persona file {target.path}")
    if span is None:
        raise FileSystemError(f"persona file {target.path} has no persona-tier region {region.attributes()}")
    return body_text(span.body(data), line_end(data)).encode("utf-8", "surrogateescape")


def _read(target: ResolvedTarget, max_bytes: int) -> FileRead:
    # A region lives in the user's own file, often a link into a dotfiles repository; only our marked
    # region of it is ever injected, so the link may point anywhere.
    return read_file(target.path, max_bytes, confine_symlinks=target.output != "region")


log = logging.getLogger(__name__)

FileKey = tuple[int, int, int, int]
# (path, sha256 of its bytes) -> the exact token count a render recorded for them, or None.
KnownTokens = Callable[[Path, str], "int | None"]


@dataclass(frozen=True, slots=True)
class _Held:
    """A capped text and the file state it was read from."""

    text: str
    key: FileKey | None


# Each source keeps the capped text it last read (the warm path's answer): a forget seen anywhere has it drop it.
HELD = caches.holders("file_source.held", owner="settings", key="a file target's state (mtime, size, inode, ctime)",
                      bound=1, holds_text=True)


class FileSource:
    """A file target's capped text, for the injector and the session snapshots alike.

    :meth:`text` is the warm path: no syscall at all within
    ``injection.check_interval_ms``; after it, one stat, and a re-read only
    when the file's (mtime_ns, size, inode, ctime_ns) changed. ctime cannot be
    set back by ``cp -p``, ``rsync -t`` or a restore, so a content change that
    restores the mtime is still seen, even in place and at the same size.
    :meth:`read` reads now. Safe from any thread.
    """

    def __init__(self, settings: Settings, target: ResolvedTarget, problems: ProblemLog, *,
                 known_tokens: KnownTokens | None = None) -> None:
        self.target = target
        self.problems = problems
        self._counter = settings.cap.counter
        self._max_bytes = settings.injection.max_file_bytes
        self._known_tokens = known_tokens
        self._poll = Throttle(settings.injection.check_interval_ms)
        self._held = _Held("", None)
        self._lock = threading.Lock()
        HELD.add(self)

    def read(self) -> str:
        """The file now, capped; OSError says why it cannot be read."""
        return self._capped(_read(self.target, self._max_bytes))

    def text(self) -> str:
        """The capped file as last seen, re-checked at most once per interval; "" (one warning) if unreadable."""
        if not self._poll.take():
            return self._held.text
        with self._lock:
            self._held = self._refresh(self._held)
            return self._held.text

    def describe(self, error: BaseException) -> str:
        """One line for a failed :meth:`read`, for warnings."""
        if isinstance(error, OSError):
            return f"persona file {self.target.path} {describe(error)}"
        return str(error)

    def close(self) -> None:
        """Nothing to release: a file source holds no handle."""

    def drop_text(self) -> None:
        """Forget the text last read: the next :meth:`text` reads the file again."""
        # No lock: a forget may be seen by a thread inside this source's refresh; one assignment is atomic.
        self._held = _Held("", None)
        self._poll.reset()

    def held_text(self) -> list[str]:
        return [self._held.text] if self._held.text else []

    def _refresh(self, held: _Held) -> _Held:
        try:
            found = _read(self.target, self._max_bytes)
            if found.key == held.key:
                return held
            fresh = _Held(self._capped(found), found.key)
        except (OSError, FileSystemError) as error:
            self.problems.warn(f"{self.describe(error)}; injecting nothing")
            return _Held("", None)
        self.problems.recovered()
        return fresh

    def _capped(self, found: FileRead) -> str:
        return block_of(found, self.target, counter=self._counter, max_bytes=self._max_bytes,
                        problems=self.problems, known_tokens=self._recorded_tokens(
                            region_of(found.data, self.target) if self.target.output == "region" else found.data))

    def _recorded_tokens(self, data: bytes) -> int | None:
        """The count a render recorded for these bytes; a failing lookup only means counting them again."""
        if self._known_tokens is None:
            return None
        try:
            return self._known_tokens(self.target.path, hashlib.sha256(data).hexdigest())
        except PersonaError as error:
            log.debug("no recorded token count for %s: %s", self.target.path, error)
            return None
