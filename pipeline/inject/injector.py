"""Put the persona into a system prompt, on every turn, cheaply.

The injector reads the injected target through its source (a file, or a block
in the store) and applies the same cap, with the same counter, budget and
section boundary, as the pipeline. The file may be hand-edited, so the cap
works on the text's own section boundaries.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from .. import caches
from ..clock import Throttle
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, resolve_target
from ..config.urls import store_target
from ..errors import PersonaError
from ..store.runs import recorded_tokens
from ..warn_once import ProblemLog
from .file_source import KnownTokens
from .prompt import appendix
from .sessions import Refresh, SessionSnapshots
from .source import Source
from .views import NOBODY, Reader, open_view_source, refresh, view_of

log = logging.getLogger(__name__)
# Each injector keeps its session's last good persona (served while the store is away): a forget seen anywhere has
# it drop it.
HELD = caches.holders("injector.held", owner="profile", key="one session of one reader", bound=1, holds_text=True)


class PersonaInjector:
    """``block()`` is the capped persona text; ``inject(prompt)`` appends it under the header.

    Live mode: the target's source as it is now (:mod:`pipeline.inject.source`);
    a warm call makes no syscall.

    Session mode: the session's snapshot, held in memory once given. A failing
    database never takes it away: the last good text is served, with one
    warning. Session mode needs a session id; without one the live file is
    injected (one warning), never one shared snapshot for every session.

    Every method may be called from any thread.
    """

    def __init__(self, settings: Settings, *, session_id: str | None = None,
                 known_tokens: KnownTokens | None = None, profile: str | None = None,
                 reader: Reader = NOBODY, enabled: bool | None = None) -> None:
        self.settings = settings
        self.session_id = session_id
        # injection.enabled is the Hermes injector's switch; a host's hook the user installed passes True.
        self.enabled = settings.injection.enabled if enabled is None else enabled
        self.reader = reader
        self.header = settings.injection.header
        self.mode = settings.injection.mode
        self.problems = ProblemLog(log)
        # The profile whose persona this is (default store.profile); a file target must allow it ({profile}).
        base = resolve_target(settings, settings.injection.target, profile=profile)
        # What this reader (its agent, its project) should see: the target, or its view (pipeline.inject.views).
        self._target: ResolvedTarget = view_of(base, reader)
        self._session_text: str | None = None  # what this session was last given: its last good persona
        self._snapshots: SessionSnapshots | None = None
        self._lock = threading.RLock()
        self._live_fallback_said = False
        self._render_poll = Throttle(settings.injection.check_interval_ms)
        self._generation_rendered: int | None = None  # the profile's change counter when it last rendered
        self._source: Source = open_view_source(settings, base, self._target, self.problems,
                                                known_tokens=known_tokens or self._recorded_tokens)
        HELD.add(self)

    @property
    def path(self) -> Path:
        return self._target.path

    @property
    def target(self) -> ResolvedTarget:
        """The target this injector serves, as its reader sees it."""
        return self._target

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
        self._render_due_live()
        return self._source.text()

    def _render_due_live(self) -> None:
        """Live mode: render what is due before the file is read, so a change to the store reaches the next
        call. Checked at most once per ``check_interval_ms`` (the same pace as the file's stat), so the warm
        path stays free of I/O; and the check is one indexed read of the profile's change counter, the
        whole tick (retention, triggers, render) running only when it moved. A database that does not exist
        yet is left alone: a hand-written file needs none."""
        if not self._render_poll.take():
            return
        target = store_target(self.settings)
        if isinstance(target, Path) and not target.exists():
            return
        try:
            sessions = self.sessions()
            generation = sessions.store.generation()
            if generation != self._generation_rendered and sessions.render_due():
                refresh(self.settings, sessions.store, self._target, self._source)
                self._generation_rendered = generation  # a busy lock leaves it unset: the next check retries
        except PersonaError as error:  # opening the store failed: the file as last rendered is served
            log.debug("no render before the prompt: %s", error)

    def _recorded_tokens(self, path: Path, sha256: str) -> int | None:
        """The count a render recorded for a file's bytes, so a host's first turn need not load the tokenizer;
        None (the file is counted) when there is no database yet, as beside a hand-written file."""
        target = store_target(self.settings)
        if isinstance(target, Path) and not target.exists():
            return None
        return recorded_tokens(self.sessions().store, path, sha256, self.settings.cap.counter)

    def inject(self, system_prompt: str) -> str:
        """The system prompt with the persona block appended under the header."""
        return system_prompt + self.appendix(self.block())

    def appendix(self, block: str) -> str:
        """Exactly what is appended to a system prompt for ``block``."""
        return appendix(self.header, block)

    def read_capped(self) -> str:
        """Read the file (or the stored block) now and cap it; OSError (MissingBlock) propagates to the caller."""
        return self._source.read()

    # -- session mode --------------------------------------------------

    def sessions(self) -> SessionSnapshots:
        """The snapshot store for this injector's settings (opened on first use).

        It waits at most ``injection.busy_timeout_ms`` for a locked database:
        the prompt path serves the last good text rather than stall.
        """
        with self._lock:
            if self._snapshots is None:  # the injector's own profile: its snapshots, and what it renders
                self._snapshots = SessionSnapshots(self.settings, profile=self._target.profile, reader=self.reader,
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
        except (OSError, PersonaError) as error:
            self.problems.warn(f"{why}, and the {self._source.describe(error)}; injecting nothing")
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
            session_id = self.session_id or self.settings.store.profile
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

    def drop_text(self) -> None:
        """Forget the session's last good persona (a forget was seen): the next block reads its snapshot, which
        the forget has already re-pinned."""
        self._session_text = None  # no lock: a forget may be seen by a thread that holds it

    def held_text(self) -> list[str]:
        return [self._session_text] if self._session_text else []

    def close(self) -> None:
        with self._lock:
            if self._snapshots is not None:
                self._snapshots.close()
                self._snapshots = None
            self._source.close()
