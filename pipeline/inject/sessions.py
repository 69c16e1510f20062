"""Session snapshots: one persona per session generation, refreshed only at compaction.

Hosts cache the system-prompt prefix, so a running session must not switch
persona mid-life. The first request records the capped file as the session's
snapshot; every later request returns those bytes. At a compaction boundary,
when the host rewrites its history anyway, :meth:`SessionSnapshots.commit`
records the file as it is then, and advances the generation only if it
changed.

Snapshots are keyed by profile (whose persona it is), the host's session id
(its conversation) and target: for a session whose reader (its agent, its
project) widens the target, the target's view (:mod:`pipeline.inject.views`).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import asdict, dataclass
from typing import Any

from ..clock import Clock, utc_now
from ..config.schema import Settings
from ..config.targets import resolve_target
from ..errors import PersonaError, StoreError
from ..store import PersonaStore
from ..store.snapshots import (
    Snapshot,
    delete_snapshots,
    digest,
    get_snapshot,
    list_snapshots,
    record_at_boundary,
    record_first,
)
from ..warn_once import ProblemLog
from .prompt import appendix
from .views import NOBODY, Reader, open_view_source, refresh, view_of

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Refresh:
    """The outcome of a compaction-boundary refresh."""

    session_id: str
    changed: bool
    generation: int
    text: str
    error: str | None = None  # why the file could not be read; the old snapshot was kept

    def to_dict(self) -> dict[str, Any]:
        # No "error" key on success: hosts such as Hermes flag any answer that has one as failed.
        return {k: v for k, v in asdict(self).items() if k != "text" and not (k == "error" and v is None)}


class SessionSnapshots:
    """Snapshot operations for the injected target of one profile, on the configured database.

    Safe to use from any thread (the store serialises its connection). Given
    ``busy_timeout_ms`` (a host's prompt path), the store it opens is a
    prompt-path one: bounded waits for locks and for the server's answers.
    The store opens ``profile`` (default ``store.profile``).
    """

    def __init__(self, settings: Settings, *, store: PersonaStore | None = None, clock: Clock = utc_now,
                 busy_timeout_ms: int | None = None, profile: str | None = None, reader: Reader = NOBODY) -> None:
        self.settings = settings
        self.store = store or PersonaStore.from_settings(settings, profile=profile, clock=clock,
                                                         busy_timeout_ms=busy_timeout_ms,
                                                         prompt_path=busy_timeout_ms is not None)
        self.profile = self.store.profile
        self.reader = reader
        self._reader_key = (reader.host, reader.project)
        base = self.base = resolve_target(settings, settings.injection.target, profile=self.profile)
        self.target = view_of(base, reader)  # the base itself when the reader adds no scope to what it shows
        self.problems = ProblemLog(log)
        self.source = open_view_source(settings, base, self.target, self.problems, store=self.store)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> SessionSnapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the file ------------------------------------------------------

    def current(self) -> str:
        """The capped file now, after rendering every target whose triggers fire (the lock permitting).

        Called only where a host builds or refreshes a persona (a session's
        first request, a compaction), never on the warm path, so a store
        change reaches the next persona with no cron. A locked or failing
        render serves the file as last rendered. A missing file is rendered
        first when the store has facts (cold start). Raises OSError when the
        file cannot be read, or PersonaError when the cold-start render fails.
        """
        self.render_due()
        try:
            return self._read()
        except FileNotFoundError:
            if not self._render_cold_start():
                raise
            return self._read()

    def render_due(self) -> bool:
        """Render what the triggers say is due, without waiting for the lock; False when it could not look
        (the lock was busy, or the render failed: the last good text is served), True when it did."""
        from ..schedule.tick import render_due  # the render pipeline loads only when a persona is (re)built

        if render_due(self.settings, self.store) is None:
            return False  # another worker is rendering this profile: its view waits with it, the prompt does not
        try:
            refresh(self.settings, self.store, self.target, self.source)
        except PersonaError as error:
            log.debug("profile %s: the view for %s was not rendered (%s); serving the last good text",
                      self.profile, self.reader.describe(), error)
            return False
        return True

    def _read(self) -> str:
        return self.source.read()

    def _render_cold_start(self) -> bool:
        if not any(self.store.count_by_tier().values()):
            return False
        from ..schedule.tick import tick  # the render pipeline is needed only for this rare path

        tick(self.settings, store=self.store, wait_s=0)  # a prompt never queues behind another worker's tick
        log.info("profile %s: rendered the missing persona file before its first snapshot", self.profile)
        return True

    def erasures(self) -> int:
        """How many forgets the profile has seen; a host compares it to drop a persona pinned before one."""
        from ..store.forgotten import erasures

        return erasures(self.store)

    def describe(self, error: BaseException) -> str:
        """One line for a failed read, for warnings and Refresh.error."""
        return self.source.describe(error)

    # -- rows ----------------------------------------------------------

    def get(self, session_id: str) -> Snapshot | None:
        """The recorded snapshot, or None."""
        return get_snapshot(self.store, session_id, self.target.name)

    def snapshot(self, session_id: str) -> Snapshot:
        """The session's persona. The first call records the capped file; first write wins.

        Nothing is recorded while the file cannot be read, or is missing with
        an empty store: the next request tries again, so a session is never
        pinned to an empty persona by accident. (A file that exists but is
        empty is recorded: the user emptied it.)
        """
        existing = self.get(session_id)
        if existing is not None:
            return existing
        try:
            text = self.current()
        except FileNotFoundError:
            return self._unrecorded(session_id, "")
        except (OSError, PersonaError) as error:
            self.problems.warn(f"{self.describe(error)}; injecting nothing until it can be read")
            return self._unrecorded(session_id, "")
        try:
            record_first(self.store, session_id, self.target.name, text, reader=self._reader_key)
        except StoreError as error:  # e.g. another writer holds the database: serve the text, record it later
            self.problems.warn(f"could not record session {session_id}'s persona ({error}); serving it unrecorded")
            return self._unrecorded(session_id, text)
        recorded = self.get(session_id)
        assert recorded is not None
        return recorded

    def _unrecorded(self, session_id: str, text: str) -> Snapshot:
        return Snapshot(self.profile, session_id, self.target.name, text, digest(text), 0, "")

    def pin(self, session_id: str, text: str, *, boundary: str | None = None) -> Snapshot:
        """Record ``text`` as the session's first snapshot, unless it already has one (first write wins).

        For a session that was given its persona while the store could not
        record it: the same bytes are kept, whatever the file says now.
        """
        record_first(self.store, session_id, self.target.name, text, boundary=boundary,
                     reader=self._reader_key)
        pinned = self.get(session_id)
        assert pinned is not None
        return pinned

    def refresh_at_compaction(self, session_id: str, *, boundary: str | None = None) -> Refresh:
        """Re-record the snapshot if the capped file differs; otherwise write nothing at all.

        A file that cannot be read keeps the old snapshot, with a warning.
        """
        try:
            text = self.current()
        except (OSError, PersonaError) as error:
            message = self.describe(error)
            self.problems.warn(f"{message}; session {session_id} keeps its persona")
            current = self.get(session_id)
            return Refresh(session_id, False, current.generation if current else 0,
                           current.text if current else "", message)
        return self.commit(session_id, text, boundary=boundary)

    def commit(self, session_id: str, text: str, *, parent: str | None = None, boundary: str | None = None
               ) -> Refresh:
        """Record ``text`` as the session's persona at a compaction boundary
        (:func:`pipeline.store.snapshots.record_at_boundary`): the generation advances only if it changed."""
        changed, generation = record_at_boundary(self.store, session_id, self.target.name, text, parent=parent,
                                                 boundary=boundary, reader=self._reader_key)
        if changed:
            log.info("session %s: persona refreshed to generation %d", session_id, generation)
        return Refresh(session_id, changed, generation, text)

    def inherit(self, session_id: str, parent_session_id: str) -> Snapshot:
        """Give a continuing session (a new id after compaction) its parent's snapshot, unless it has one."""
        own = self.get(session_id)
        if own is not None:
            return own
        parent = self.get(parent_session_id)
        if parent is None:
            return self.snapshot(session_id)
        self.commit(session_id, parent.text, parent=parent_session_id, boundary=parent.boundary)
        inherited = self.get(session_id)
        assert inherited is not None
        return inherited

    def list(self) -> list[Snapshot]:
        """Every session's snapshot for this profile and target."""
        return list_snapshots(self.store, self.target.name)

    def delete(self, session_id: str) -> int:
        """Delete a session's snapshots (every target), e.g. when it ends; returns how many rows went."""
        return delete_snapshots(self.store, session_id)

    def _delete_by_old_name(self, session_id: str) -> int:
        warnings.warn("SessionSnapshots.forget is deprecated; call delete", DeprecationWarning, stacklevel=2)
        return self.delete(session_id)

    # The old name, kept one release: "forget" now means only the privacy erasure (`persona forget`).
    forget = _delete_by_old_name

    def assemble(self, system_prompt: str, session_id: str) -> str:
        """The system prompt followed by the session's persona section.

        Across a refresh only the persona section's bytes change; the prompt
        before it is passed through untouched.
        """
        return system_prompt + appendix(self.settings.injection.header, self.snapshot(session_id).text)
