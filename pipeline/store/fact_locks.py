"""Locked facts (``persona_locked``): facts the user marked so that no agent tool may replace, demote, merge or
forget them (``persona lock ID``; ``persona unlock ID`` undoes it).

The lock binds the agents' tools only (:mod:`pipeline.integrations.tools` asks :meth:`LockedFacts.check_unlocked`
before each of those writes): the user still changes a locked fact from the CLI or the page. Rows hold ids, never
text; a lock whose fact left the profile for good (forgotten, or demoted and then forgotten) goes with the erasure.
A superseded fact keeps its row, so undoing the supersession brings it back locked.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import LockedError, NotFoundError
from .backend import Connection
from .database import Database
from .fact_row import check_id


class LockedFacts(Database):
    """The store's lock operations (a base of :class:`.facts.PersonaStore`)."""

    def lock_fact(self, persona_id: int) -> bool:
        """Lock a current fact of the profile; whether it was unlocked before (NotFoundError for no such fact)."""
        with self.transaction() as conn:
            self._current(conn, persona_id)
            done = conn.execute("INSERT INTO persona_locked (profile, persona_id, locked_at) VALUES (?, ?, ?) "
                                "ON CONFLICT (profile, persona_id) DO NOTHING", (self.profile, persona_id, self.now()))
            return bool(done.rowcount)

    def unlock_fact(self, persona_id: int) -> bool:
        """Unlock a fact; whether it was locked (NotFoundError for an id the profile never held as a fact)."""
        with self.transaction() as conn:
            done = conn.execute("DELETE FROM persona_locked WHERE profile = ? AND persona_id = ?",
                                (self.profile, check_id(persona_id)))
            if not done.rowcount:
                self._current(conn, persona_id)
            return bool(done.rowcount)

    def locked_ids(self) -> set[int]:
        """The ids of the profile's locked facts."""
        with self.read() as conn:
            return _locked(conn, self.profile)

    def check_unlocked(self, ids: Iterable[int], *, doing: str) -> None:
        """LockedError naming the first locked fact of ``ids``: an agent tool may not ``doing`` it."""
        with self.read() as conn:
            found = sorted(_locked(conn, self.profile) & set(ids))
        if found:
            raise LockedError(f"persona fact #{found[0]} is locked: no agent tool may {doing} it; the user can change "
                              f"it with the persona CLI or page, or unlock it with `persona unlock {found[0]}`")

    def _current(self, conn: Connection, persona_id: int) -> None:
        row = conn.execute("SELECT 1 FROM memoria_persona WHERE id = ? AND session_id = ?",
                           (check_id(persona_id), self.profile)).fetchone()
        if row is None:
            raise NotFoundError(f"no persona fact with id {persona_id} in profile {self.profile!r}")


def _locked(conn: Connection, profile: str) -> set[int]:
    return {int(row[0]) for row in conn.execute("SELECT persona_id FROM persona_locked WHERE profile = ?", (profile,))}


def forget_locks(store: Database, conn: Connection) -> None:
    """Drop the locks of facts the profile no longer holds, current or superseded (an erasure; caller's
    transaction): a lock is only an id, but it outlives nothing it named."""
    conn.execute("DELETE FROM persona_locked WHERE profile = ? AND persona_id NOT IN (SELECT id FROM memoria_persona "
                 "WHERE session_id = ?) AND persona_id NOT IN (SELECT id FROM persona_superseded WHERE session_id = ?)",
                 (store.profile, store.profile, store.profile))
