"""Put the persona file into a system prompt, on every turn, cheaply.

The injector reads the injected target's file and applies the same cap, with
the same counter, budget and section boundary, as the pipeline. The file may
be hand-edited, so the cap works on the text's own section boundaries.
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
from ..fs.read import describe, read_file
from ..warn_once import ProblemLog
from .file_source import block_of, read_block
from .sessions import Refresh, SessionSnapshots, appendix
from .store_source import BlockSource

log = logging.getLogger(__name__)

FileKey = tuple[int, int, int, int]
# (path, sha256 of its bytes) -> the exact token count a render recorded for them, or None.
KnownTokens = Callable[[Path, str], "int | None"]


@dataclass(frozen=True, slots=True)
class Block:
    """A capped block and the file state it was read from."""

    text: str
    key: FileKey | None


class PersonaInjector:
    """``block()`` is the capped persona text; ``inject(prompt)`` appends it under the header.

    Live mode: a warm call makes no syscall. The file is stat'ed at most once
    per ``injection.check_interval_ms``, and re-read only when its
    (mtime_ns, size, inode, ctime_ns) changed. ctime cannot be set back by
    ``cp -p``, ``rsync -t`` or a restore, so a content change that restores the
    mtime is still seen, even in place and at the same size.

    Session mode: the session's snapshot, held in memory once given. A failing
    database never takes it away: the last good text is served, with one
    warning. Session mode needs a session id; without one the live file is
    injected (one warning), never one shared snapshot for every session.

    Every method may be called from any thread.
    """

    def __init__(self, settings: Settings, *, session_id: str | None = None,
                 known_tokens: KnownTokens | None = None, profile: str | None = None) -> None:
        self.settings = settings
        self._known_tokens = known_tokens
        self.session_id = session_id
        self.enabled = settings.injection.enabled
        self.header = settings.injection.header
        self.mode = settings.injection.mode
        self.problems = ProblemLog(log)
        # The profile whose persona this is (default store.session); a file target must allow it ({profile}).
        self._target: ResolvedTarget = settings.target(settings.injection.target, profile=profile)
        self._interval_ns = settings.injection.check_interval_ms * 1_000_000
        self._checked_at: int | None = None
        self._block = Block("", None)
        self._session_text: str | None = None  # what this session was last given: its last good persona
        self._snapshots: SessionSnapshots | None = None
        self._lock = threading.RLock()
        self._live_fallback_said = False
        self._source = BlockSource(settings, self._target, self.problems) if self._target.in_store else None

    @property
    def path(self) -> Path:
        return self._target.path

    def block(self) -> str:
        """The capped persona text, or "" when disabled or unreadable (with one warning per distinct problem)."""
        if not self.enabled:
            return ""
        if self.mode == "session":
            if self._session_text is not None:
                return self._session_text
            if self.session_id is not None:
                return self._session_block()
            if not self._live_fallback_said:
                self._live_fallback_said = True
                log.warning("injection.mode is session but the host gave no session id; injecting the live file "
                            "instead of one snapshot shared by every session")
        if self._source is not None:
            return self._source.text()
        now = time.monotonic_ns()
        if self._checked_at is not None and now - self._checked_at < self._interval_ns:
            return self._block.text
        with self._lock:
            self._checked_at = now
            self._block = self._refresh(self._block)
            return self._block.text

    def inject(self, system_prompt: str) -> str:
        """The system prompt with the persona block appended under the header."""
        return system_prompt + self.appendix(self.block())

    def appendix(self, block: str) -> str:
        """Exactly what is appended to a system prompt for ``block``."""
        return appendix(self.header, block)

    def read_capped(self) -> str:
        """Read the file (or the stored block) now and cap it; OSError propagates to the caller."""
        if self._source is not None:
            return self._source.text()
        injection = self.settings.injection
        return read_block(self._target, counter=self.settings.cap.counter, max_bytes=injection.max_file_bytes,
                          problems=self.problems)

    # -- session mode --------------------------------------------------

    def sessions(self) -> SessionSnapshots:
        """The snapshot store for this injector's settings (opened on first use).

        It waits at most ``injection.busy_timeout_ms`` for a locked database:
        the prompt path serves the last good text rather than stall.
        """
        with self._lock:
            if self._snapshots is None:
                self._snapshots = SessionSnapshots(self.settings,
                                                   busy_timeout_ms=self.settings.injection.busy_timeout_ms)
            return self._snapshots

    def _session_block(self) -> str:
        with self._lock:
            if self._session_text is not None:
                return self._session_text
            assert self.session_id is not None
            try:
                snapshot = self.sessions().snapshot(self.session_id)
            except PersonaError as error:
                return self._unpinned(f"session snapshot unavailable ({error})")
            if snapshot.generation:
                self._session_text = snapshot.text
                self.problems.recovered()
            return snapshot.text

    def _unpinned(self, why: str) -> str:
        """The file itself, recorded nowhere, when the snapshot store cannot be used: never inject nothing."""
        try:
            text = self.read_capped()
        except OSError as error:
            self.problems.warn(f"{why}, and the persona file {describe(error)}; injecting nothing")
            return ""
        self.problems.warn(f"{why}; injecting the persona file as it is, unpinned, until the store recovers")
        return text

    def current(self) -> str | None:
        """The capped file now, for a compaction about to happen; None (and a warning) if it cannot be read."""
        try:
            return self.sessions().current()
        except (OSError, PersonaError) as error:
            self.problems.warn(f"{self.sessions().describe(error)}; the session keeps its persona")
            return None

    def adopt(self, text: str, *, session_id: str, parent_session_id: str | None = None) -> Refresh | None:
        """The host rebuilt its prompt with ``text`` at a compaction: make it the session's persona.

        The text is served from now on even if recording it fails.
        """
        with self._lock:
            self.session_id, self._session_text = session_id, text
            try:
                return self.sessions().commit(session_id, text, parent=parent_session_id)
            except PersonaError as error:
                self.problems.warn(f"could not record the refreshed persona of session {session_id} ({error}); "
                                   "serving it from memory")
                return None

    def refresh_at_compaction(self) -> Refresh:
        """The compaction-boundary refresh for this injector's session, in one step."""
        with self._lock:
            session_id = self.session_id or self.settings.store.session
            text = self.current()
            if text is None:
                kept = self._session_text or ""
                return Refresh(session_id, False, 0, kept, "the persona file could not be read")
            result = self.adopt(text, session_id=session_id)
            return result or Refresh(session_id, False, 0, text, "the refreshed persona could not be recorded")

    def switch_session(self, session_id: str, *, parent_session_id: str | None = None) -> None:
        """Continue under a new session id.

        With a parent (a compaction that rotated the id) the new id inherits
        the parent's snapshot, and keeps serving it even if the database
        fails; without one a new conversation gets a snapshot of its own.
        """
        with self._lock:
            self.session_id = session_id
            if not parent_session_id:
                self._session_text = None
                return
            if not (self.enabled and self.mode == "session"):
                return
            try:
                inherited = self.sessions().inherit(session_id, parent_session_id)
            except PersonaError as error:
                self.problems.warn(f"could not carry session {parent_session_id}'s persona over to {session_id} "
                                   f"({error}); serving it from memory")
                return
            if inherited.generation:
                self._session_text = inherited.text

    def close(self) -> None:
        with self._lock:
            if self._snapshots is not None:
                self._snapshots.close()
                self._snapshots = None
            if self._source is not None:
                self._source.close()

    # -- live mode -----------------------------------------------------

    def _refresh(self, cached: Block) -> Block:
        injection = self.settings.injection
        try:
            found = read_file(self._target.path, injection.max_file_bytes)
            if found.key == cached.key:
                return cached
            block = Block(block_of(found, self._target, counter=self.settings.cap.counter,
                                   max_bytes=injection.max_file_bytes, problems=self.problems,
                                   known_tokens=self._recorded_tokens(found.data)), found.key)
        except OSError as error:
            self.warn(error)
            return Block("", None)
        self.problems.recovered()
        return block

    def _recorded_tokens(self, data: bytes) -> int | None:
        """The count a render recorded for these bytes; a failing lookup only means counting them again."""
        if self._known_tokens is None:
            return None
        try:
            return self._known_tokens(self._target.path, hashlib.sha256(data).hexdigest())
        except PersonaError as error:
            log.debug("no recorded token count for %s: %s", self._target.path, error)
            return None

    def warn(self, error: OSError) -> None:
        """Log a read failure once per distinct problem."""
        self.problems.warn(f"persona file {self._target.path} {describe(error)}; injecting nothing")
