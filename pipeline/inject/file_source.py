"""A file target's capped text: the file read defensively, capped for injection.

The injector and the session snapshots both read a target through a source
(this one, or :mod:`pipeline.inject.store_source` for a block in the
database): the same reader, the same size bound, the same cap.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config.schema import Settings
from ..config.targets import ResolvedTarget
from ..errors import PersonaError
from ..fs.read import FileRead, describe, read_file
from ..render.notes import lazy_note
from ..render.section_cap import cap_text
from ..render.tokens import get_counter
from ..warn_once import ProblemLog


def block_of(found: FileRead, target: ResolvedTarget, *, counter: str, max_bytes: int, problems: ProblemLog,
             known_tokens: int | None = None) -> str:
    """The capped block of a file already read; ``known_tokens`` is its exact count, when a render recorded it."""
    raw, truncated = found.data, found.truncated
    if truncated:
        problems.warn(f"persona file {target.path} is larger than {max_bytes} bytes (injection.max_file_bytes); "
                      "only its first whole lines up to that size are used")
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.warn(f"persona file {target.path} is not valid UTF-8; bad bytes were replaced")
        text = raw.decode("utf-8", errors="replace")
    return cap_block(text, target, counter, known_tokens=None if truncated else known_tokens)


def cap_block(text: str, target: ResolvedTarget, counter: str, *, known_tokens: int | None = None) -> str:
    """The shared cap with the target's budget, boundary and note, minus any title of the file's own.

    The injector's header is the block's only H1, so a leading ``# Title``
    line is dropped first. Results are remembered per content: hosts build new
    injectors (a new agent, a new session) for the same file all the time, and
    only the first of them needs to count its tokens.

    ``known_tokens`` is the text's exact count under ``counter`` (the render
    that wrote it recorded it). Within the budget, the cap would keep the text
    whole, so nothing is counted and the tokenizer need not even load: a
    one-shot ``persona inject`` saved most of a second. A title only takes
    tokens away: the tokenizer splits text at a line break followed by a
    non-space, so the body's count is the whole count minus the title's.
    """
    key = (text, target, counter)
    capped = _CAPPED.get(key)
    if capped is None:
        body = text.partition("\n")[2].lstrip("\n") if text.startswith("# ") else text
        if known_tokens is not None and known_tokens <= target.budget:
            capped = body
        else:
            capped = cap_text(body, budget=target.budget, counter=get_counter(counter), boundary=target.boundary,
                              note=lazy_note(target)).text
        with _CAPPED_LOCK:
            _CAPPED[key] = capped
            if len(_CAPPED) > MEMO_SIZE:
                _CAPPED.pop(next(iter(_CAPPED)))
    return capped


def forget() -> None:
    """Forget every remembered capped text (benchmarks measure a first read with it)."""
    with _CAPPED_LOCK:
        _CAPPED.clear()


MEMO_SIZE = 64  # distinct (content, target) pairs remembered; persona files are a few KB each
_CAPPED: dict[tuple[str, ResolvedTarget, str], str] = {}
_CAPPED_LOCK = threading.Lock()


log = logging.getLogger(__name__)

FileKey = tuple[int, int, int, int]
# (path, sha256 of its bytes) -> the exact token count a render recorded for them, or None.
KnownTokens = Callable[[Path, str], "int | None"]


@dataclass(frozen=True, slots=True)
class _Held:
    """A capped text and the file state it was read from."""

    text: str
    key: FileKey | None


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
        self._interval_ns = settings.injection.check_interval_ms * 1_000_000
        self._checked_at: int | None = None
        self._held = _Held("", None)
        self._lock = threading.Lock()

    def read(self) -> str:
        """The file now, capped; OSError says why it cannot be read."""
        return self._capped(read_file(self.target.path, self._max_bytes))

    def text(self) -> str:
        """The capped file as last seen, re-checked at most once per interval; "" (one warning) if unreadable."""
        now = time.monotonic_ns()
        if self._checked_at is not None and now - self._checked_at < self._interval_ns:
            return self._held.text
        with self._lock:
            self._checked_at = now
            self._held = self._refresh(self._held)
            return self._held.text

    def describe(self, error: BaseException) -> str:
        """One line for a failed :meth:`read`, for warnings."""
        if isinstance(error, OSError):
            return f"persona file {self.target.path} {describe(error)}"
        return str(error)

    def close(self) -> None:
        """Nothing to release: a file source holds no handle."""

    def _refresh(self, held: _Held) -> _Held:
        try:
            found = read_file(self.target.path, self._max_bytes)
            if found.key == held.key:
                return held
            fresh = _Held(self._capped(found), found.key)
        except OSError as error:
            self.problems.warn(f"{self.describe(error)}; injecting nothing")
            return _Held("", None)
        self.problems.recovered()
        return fresh

    def _capped(self, found: FileRead) -> str:
        return block_of(found, self.target, counter=self._counter, max_bytes=self._max_bytes,
                        problems=self.problems, known_tokens=self._recorded_tokens(found.data))

    def _recorded_tokens(self, data: bytes) -> int | None:
        """The count a render recorded for these bytes; a failing lookup only means counting them again."""
        if self._known_tokens is None:
            return None
        try:
            return self._known_tokens(self.target.path, hashlib.sha256(data).hexdigest())
        except PersonaError as error:
            log.debug("no recorded token count for %s: %s", self.target.path, error)
            return None
