"""Put the persona file into a system prompt, on every turn, cheaply.

The injector reads the injected target's file and applies the same cap, with
the same counter, budget and section boundary, as the pipeline. The file may
be hand-edited, so the cap works on the text's own section boundaries.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .cap import cap_text
from .errors import PersonaError
from .files import describe, read_regular_bytes
from .settings import ResolvedTarget, Settings
from .tokens import get_counter

if TYPE_CHECKING:
    from .sessions import Refresh, SessionSnapshots

log = logging.getLogger(__name__)

FileKey = tuple[int, int, int, int]


@dataclass(frozen=True, slots=True)
class Block:
    """A capped block and the file state it was read from."""

    text: str
    key: FileKey | None


class PersonaInjector:
    """``block()`` is the capped persona text; ``inject(prompt)`` appends it under the header.

    A warm call makes no syscall: the file is stat'ed at most once per
    ``injection.check_interval_ms``, and re-read only when its
    (mtime_ns, size, inode, ctime_ns) changed. ctime cannot be set back by
    ``cp -p``, ``rsync -t`` or a restore, so a content change that restores the
    mtime is still seen, even in place and at the same size.
    """

    def __init__(self, settings: Settings, *, session_id: str | None = None) -> None:
        self.settings = settings
        self.session_id = session_id or settings.store.session
        self.enabled = settings.injection.enabled
        self.header = settings.injection.header
        self._target: ResolvedTarget = settings.target(settings.injection.target)
        self._interval_ns = settings.injection.check_interval_ms * 1_000_000
        self._checked_at: int | None = None
        self._block = Block("", None)
        self._warned: set[tuple[str, str]] = set()
        self.mode = settings.injection.mode
        self._session_text: str | None = None
        self._snapshots: SessionSnapshots | None = None

    @property
    def path(self) -> Path:
        return self._target.path

    def block(self) -> str:
        """The capped persona text, or "" when disabled or unreadable (with one warning per distinct error)."""
        if not self.enabled:
            return ""
        if self.mode == "session":
            return self._session_block()
        now = time.monotonic_ns()
        if self._checked_at is not None and now - self._checked_at < self._interval_ns:
            return self._block.text
        self._checked_at = now
        self._block = self._refresh(self._block)
        return self._block.text

    def inject(self, system_prompt: str) -> str:
        """The system prompt with the persona block appended under the header."""
        block = self.block()
        return f"{system_prompt}{self.appendix(block)}" if block else system_prompt

    def appendix(self, block: str) -> str:
        """Exactly what is appended to a system prompt for ``block``."""
        return f"\n\n{self.header}\n{block}" if block else ""

    def _session_block(self) -> str:
        # Held in memory after the first read: the snapshot only changes through
        # refresh_at_compaction, which resets it here.
        if self._session_text is None:
            try:
                snapshot = self.sessions().snapshot(self.session_id)
            except PersonaError as error:
                self._warn_once(type(error).__name__, f"session snapshot unavailable ({error}); injecting nothing")
                return ""
            if snapshot.generation == 0:  # not recorded: the file could not be read; try again next time
                return snapshot.text
            self._session_text = snapshot.text
        return self._session_text

    def sessions(self) -> SessionSnapshots:
        """The snapshot store for this injector's settings (opened on first use)."""
        if self._snapshots is None:
            from .sessions import SessionSnapshots  # sessions reads files through this module

            self._snapshots = SessionSnapshots(self.settings)
        return self._snapshots

    def refresh_at_compaction(self) -> Refresh:
        """The compaction-boundary refresh for this injector's session."""
        result = self.sessions().refresh_at_compaction(self.session_id)
        self._session_text = None
        return result

    def switch_session(self, session_id: str, *, parent_session_id: str | None = None) -> None:
        """Continue under a new session id; with a parent, the new id inherits the parent's snapshot."""
        if parent_session_id and self.enabled and self.mode == "session":
            self.sessions().inherit(session_id, parent_session_id)
        self.session_id = session_id
        self._session_text = None

    def close(self) -> None:
        if self._snapshots is not None:
            self._snapshots.close()
            self._snapshots = None

    def _refresh(self, cached: Block) -> Block:
        path = self._target.path
        try:
            stat = os.stat(path)
            key = (stat.st_mtime_ns, stat.st_size, stat.st_ino, stat.st_ctime_ns)
            if key == cached.key:
                return cached
            return Block(self.read_capped(), key)
        except OSError as error:
            self.warn(error)
            return Block("", None)

    def read_capped(self) -> str:
        """Read the file now and cap it; OSError propagates to the caller."""
        path = self._target.path
        raw = read_regular_bytes(path)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            self._warn_once("utf-8", f"persona file {path} is not valid UTF-8; bad bytes were replaced")
            text = raw.decode("utf-8", errors="replace")
        return self.cap(text)

    def cap(self, text: str) -> str:
        """The shared cap with this target's budget, boundary and note, minus any title of the file's own."""
        target = self._target
        counter = get_counter(self.settings.cap.counter)
        capped = cap_text(_drop_title(text), budget=target.budget, counter=counter, boundary=target.boundary,
                          note=target.note)
        return capped.text

    def warn(self, error: OSError) -> None:
        """Log a read failure once per kind of error and path."""
        self._warn_once(type(error).__name__, f"persona file {self._target.path} {describe(error)}; injecting nothing")

    def _warn_once(self, kind: str, message: str) -> None:
        key = (kind, str(self._target.path))
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)


def _drop_title(text: str) -> str:
    """The injector's header is the block's only H1, so a leading ``# Title`` line in the file is dropped."""
    if text.startswith("# "):
        _, _, rest = text.partition("\n")
        return rest.lstrip("\n")
    return text
