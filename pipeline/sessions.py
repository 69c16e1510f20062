"""Session snapshots: one persona per session generation, refreshed only at compaction.

Hosts cache the system-prompt prefix, so a running session must not switch
persona mid-life. The first request records the capped file as the session's
snapshot; every later request returns those bytes. At a compaction boundary,
when the host rewrites its history anyway, :meth:`SessionSnapshots.refresh_at_compaction`
compares the file with the snapshot and advances the generation only if it
changed.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass
from typing import Any

from .clock import Clock, utc_now
from .injector import PersonaInjector
from .settings import Settings
from .store import PersonaStore

log = logging.getLogger(__name__)

COLUMNS = "session_id, target, text, sha256, generation, recorded_at"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The persona a session sees, exactly as injected."""

    session_id: str
    target: str
    text: str
    sha256: str
    generation: int
    recorded_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Refresh:
    """The outcome of a compaction-boundary refresh."""

    session_id: str
    changed: bool
    generation: int
    error: str | None = None  # why the file could not be read; the old snapshot was kept

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SessionSnapshots:
    """Snapshot operations for the injected target, on the configured database."""

    def __init__(self, settings: Settings, *, store: PersonaStore | None = None, clock: Clock = utc_now) -> None:
        self.target = settings.injection.target
        self.store = store or PersonaStore.from_settings(settings, clock=clock)
        self._reader = PersonaInjector(settings)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> SessionSnapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, session_id: str) -> Snapshot | None:
        """The recorded snapshot, or None."""
        with self.store.errors():
            row = self.store.conn.execute(
                f"SELECT {COLUMNS} FROM persona_snapshots WHERE session_id = ? AND target = ?",
                (session_id, self.target),
            ).fetchone()
        return None if row is None else Snapshot(**dict(row))

    def snapshot(self, session_id: str) -> Snapshot:
        """The session's persona. The first call records the capped file; first write wins.

        A missing file records an empty snapshot. Any other read failure is
        not recorded (the next request tries again), so an error never pins a
        session to an empty persona.
        """
        existing = self.get(session_id)
        if existing is not None:
            return existing
        try:
            text = self._reader.read_capped()
        except FileNotFoundError:
            text = ""
        except OSError as error:
            self._reader.warn(error)
            return Snapshot(session_id, self.target, "", digest(""), 0, "")
        with self.store.transaction() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, 1, ?)",
                (session_id, self.target, text, digest(text), self.store.now()),
            )
        recorded = self.get(session_id)
        assert recorded is not None
        return recorded

    def refresh_at_compaction(self, session_id: str) -> Refresh:
        """Re-record the snapshot if the capped file differs; otherwise write nothing at all."""
        try:
            text = self._reader.read_capped()
        except OSError as error:
            self._reader.warn(error)
            current = self.get(session_id)
            return Refresh(session_id, False, current.generation if current else 0, str(error))
        current = self.get(session_id)
        if current is not None and current.text == text:
            return Refresh(session_id, False, current.generation)
        return self._record(session_id, text)

    def _record(self, session_id: str, text: str) -> Refresh:
        # Re-read inside the write transaction: a concurrent refresh may have recorded the same text already.
        with self.store.transaction() as conn:
            row = conn.execute(
                "SELECT text, generation FROM persona_snapshots WHERE session_id = ? AND target = ?",
                (session_id, self.target),
            ).fetchone()
            if row is not None and row["text"] == text:
                return Refresh(session_id, False, row["generation"])
            generation = 1 if row is None else row["generation"] + 1
            conn.execute(
                f"INSERT OR REPLACE INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, self.target, text, digest(text), generation, self.store.now()),
            )
        log.info("session %s: persona refreshed to generation %d", session_id, generation)
        return Refresh(session_id, True, generation)

    def inherit(self, session_id: str, parent_session_id: str) -> Snapshot:
        """Give a continuing session (a new id after compaction) its parent's snapshot, unless it has one."""
        parent = self.get(parent_session_id)
        if parent is None:
            return self.snapshot(session_id)
        with self.store.transaction() as conn:
            conn.execute(
                f"INSERT OR IGNORE INTO persona_snapshots ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, self.target, parent.text, parent.sha256, parent.generation, self.store.now()),
            )
        inherited = self.get(session_id)
        assert inherited is not None
        return inherited

    def list(self) -> list[Snapshot]:
        """Every session's snapshot for this target."""
        with self.store.errors():
            rows = self.store.conn.execute(
                f"SELECT {COLUMNS} FROM persona_snapshots WHERE target = ? ORDER BY session_id", (self.target,)
            ).fetchall()
        return [Snapshot(**dict(row)) for row in rows]

    def forget(self, session_id: str) -> int:
        """Delete a session's snapshots (every target); returns how many rows went."""
        with self.store.transaction() as conn:
            return conn.execute("DELETE FROM persona_snapshots WHERE session_id = ?", (session_id,)).rowcount

    def assemble(self, system_prompt: str, session_id: str) -> str:
        """The system prompt followed by the session's persona section.

        Across a refresh only the persona section's bytes change; the prompt
        before it is passed through untouched.
        """
        return system_prompt + self._reader.appendix(self.snapshot(session_id).text)
