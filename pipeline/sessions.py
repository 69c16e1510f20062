"""Session snapshots: one persona per session generation, refreshed only at compaction.

Hosts cache the system-prompt prefix, so a running session must not switch
persona mid-life. The first request records the capped file as the session's
snapshot; every later request returns those bytes. At a compaction boundary,
when the host rewrites its history anyway, :meth:`SessionSnapshots.commit`
records the file as it is then, and advances the generation only if it
changed.

Snapshots are keyed by profile (the store session), host session id and
target.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass
from typing import Any

from .block import block_of, stored_block_of
from .blocks import MissingBlock, read_bounded
from .clock import Clock, utc_now
from .errors import PersonaError, StoreError
from .files import describe, read_file
from .problems import ProblemLog
from .runs import recorded_tokens
from .settings import Settings
from .store import PersonaStore

log = logging.getLogger(__name__)

COLUMNS = "profile, session_id, target, text, sha256, generation, recorded_at, boundary"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The persona a session sees, exactly as injected. Generation 0 means "not recorded yet"."""

    profile: str
    session_id: str
    target: str
    text: str
    sha256: str
    generation: int
    recorded_at: str
    boundary: str | None = None  # the compaction the snapshot was taken at, where the host names one

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SessionSnapshots:
    """Snapshot operations for the injected target of one profile, on the configured database.

    Safe to use from any thread (the store serialises its connection).
    """

    def __init__(self, settings: Settings, *, store: PersonaStore | None = None, clock: Clock = utc_now,
                 busy_timeout_ms: int | None = None) -> None:
        self.settings = settings
        self.store = store or PersonaStore.from_settings(settings, clock=clock, busy_timeout_ms=busy_timeout_ms)
        self.profile = self.store.session
        self.target = settings.target(settings.injection.target, profile=self.profile)
        self.problems = ProblemLog(log)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> SessionSnapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the file ------------------------------------------------------

    def current(self) -> str:
        """The capped file now. A missing file is rendered first when the store has facts (cold start).

        Raises OSError when the file cannot be read, or PersonaError when the
        cold-start render fails.
        """
        try:
            return self._read()
        except FileNotFoundError:
            if not self._render_cold_start():
                raise
            return self._read()

    def _read(self) -> str:
        if self.target.in_store:
            return self._read_stored()
        max_bytes = self.settings.injection.max_file_bytes
        found = read_file(self.target.path, max_bytes)
        return block_of(found, self.target, counter=self.settings.cap.counter, max_bytes=max_bytes,
                        problems=self.problems, known_tokens=self._recorded_tokens(found.data))

    def _read_stored(self) -> str:
        max_bytes = self.settings.injection.max_file_bytes
        stored = read_bounded(self.store, self.target.name, max_bytes)
        if stored is None:
            raise MissingBlock(f"no block rendered yet for target {self.target.name!r}")
        return stored_block_of(stored, self.target, counter=self.settings.cap.counter, max_bytes=max_bytes,
                               problems=self.problems)

    def _recorded_tokens(self, data: bytes) -> int | None:
        """The count the render that wrote these bytes recorded: a host's first turn need not load the tokenizer."""
        try:
            return recorded_tokens(self.store, self.target.path, hashlib.sha256(data).hexdigest(),
                                   self.settings.cap.counter)
        except PersonaError as error:
            log.debug("no recorded token count for %s: %s", self.target.path, error)
            return None

    def _render_cold_start(self) -> bool:
        if not any(self.store.count_by_tier().values()):
            return False
        from .ticking import tick  # the render pipeline is needed only for this rare path

        tick(self.settings, store=self.store)
        log.info("profile %s: rendered the missing persona file before its first snapshot", self.profile)
        return True

    def describe(self, error: BaseException) -> str:
        """One line for a failed read, for warnings and Refresh.error."""
        if isinstance(error, OSError) and not isinstance(error, MissingBlock):
            return f"persona file {self.target.path} {describe(error)}"
        return str(error)

    # -- rows ----------------------------------------------------------

    def get(self, session_id: str) -> Snapshot | None:
        """The recorded snapshot, or None."""
        with self.store.read() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM persona_snapshots WHERE profile = ? AND session_id = ? AND target = ?",
                (self.profile, session_id, self.target.name),
            ).fetchone()
        return None if row is None else Snapshot(**dict(row))

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
            with self.store.transaction() as conn:
                conn.execute(
                    f"INSERT INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, ?, 1, ?, NULL) "
                    "ON CONFLICT DO NOTHING",
                    (self.profile, session_id, self.target.name, text, digest(text), self.store.now()),
                )
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
        with self.store.transaction() as conn:
            conn.execute(
                f"INSERT INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT DO NOTHING",
                (self.profile, session_id, self.target.name, text, digest(text), self.store.now(), boundary),
            )
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
        """Record ``text`` as the session's persona at a compaction boundary.

        The generation advances only if the text differs from the session's
        snapshot (or, for a new session id, its parent's); an unchanged text
        leaves the row byte-identical, timestamps included. The check runs
        inside the write transaction, so two concurrent refreshes agree.
        """
        with self.store.transaction() as conn:
            row = self._row(conn, session_id)
            base = row or (self._row(conn, parent) if parent else None)
            if base is not None and base["text"] == text:
                generation = base["generation"]
                if row is None:
                    self._insert(conn, session_id, text, generation, boundary)
                elif boundary is not None and row["boundary"] != boundary:
                    conn.execute("UPDATE persona_snapshots SET boundary = ? WHERE profile = ? AND session_id = ? "
                                 "AND target = ?", (boundary, self.profile, session_id, self.target.name))
                return Refresh(session_id, False, generation, text)
            generation = 1 if base is None else base["generation"] + 1
            self._insert(conn, session_id, text, generation, boundary)
        log.info("session %s: persona refreshed to generation %d", session_id, generation)
        return Refresh(session_id, True, generation, text)

    def _row(self, conn: Any, session_id: str) -> Any:
        return conn.execute(
            "SELECT text, generation, boundary FROM persona_snapshots WHERE profile = ? AND session_id = ? "
            "AND target = ?", (self.profile, session_id, self.target.name),
        ).fetchone()

    def _insert(self, conn: Any, session_id: str, text: str, generation: int, boundary: str | None) -> None:
        conn.execute(
            f"INSERT INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (profile, session_id, target) DO UPDATE SET text = excluded.text, sha256 = excluded.sha256, "
            "generation = excluded.generation, recorded_at = excluded.recorded_at, boundary = excluded.boundary",
            (self.profile, session_id, self.target.name, text, digest(text), generation, self.store.now(), boundary),
        )

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
        with self.store.read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM persona_snapshots WHERE profile = ? AND target = ? ORDER BY session_id",
                (self.profile, self.target.name),
            ).fetchall()
        return [Snapshot(**dict(row)) for row in rows]

    def forget(self, session_id: str) -> int:
        """Delete a session's snapshots (every target); returns how many rows went."""
        with self.store.transaction() as conn:
            return int(conn.execute("DELETE FROM persona_snapshots WHERE profile = ? AND session_id = ?",
                                    (self.profile, session_id)).rowcount)

    def assemble(self, system_prompt: str, session_id: str) -> str:
        """The system prompt followed by the session's persona section.

        Across a refresh only the persona section's bytes change; the prompt
        before it is passed through untouched.
        """
        return system_prompt + appendix(self.settings.injection.header, self.snapshot(session_id).text)


def appendix(header: str, block: str) -> str:
    """Exactly what is appended to a system prompt for ``block`` ("" for an empty block)."""
    return f"\n\n{header}\n{block}" if block else ""
