"""`injection.source: store`: the injected target's block, read from the database.

The warm path makes no syscall and no query. On PostgreSQL it asks the
process's block listener whether anything was announced for this profile
and target; elsewhere (SQLite, or while the listener reconnects) it checks
the block's hash at most once per ``injection.check_interval_ms``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from ..config.schema import Settings
from ..config.targets import ResolvedTarget
from ..config.urls import store_target
from ..errors import PersonaError
from ..store import PersonaStore
from ..store.blocks import MissingBlock, StoredBlock, block_version, read_block
from ..warn_once import ProblemLog
from .file_source import cap_block

log = logging.getLogger(__name__)


class StoreSource:
    """A store target's capped block, for the injector and the session snapshots alike.

    :meth:`text` is the warm path (see the module's docstring); :meth:`read`
    reads now. ``store`` shares a store the caller owns; without one the
    source opens a read-only store of its own on first use. Safe from any thread.
    """

    def __init__(self, settings: Settings, target: ResolvedTarget, problems: ProblemLog, *,
                 store: PersonaStore | None = None) -> None:
        self.settings = settings
        self.target = target
        self.problems = problems
        self.counter = settings.cap.counter
        self._interval_ns = settings.injection.check_interval_ms * 1_000_000
        self._store: PersonaStore | None = store
        self._owns_store = store is None
        self._listener: Any = None
        self._heard: Any = None
        self._version: str | None = None
        self._text = ""
        self._checked_at: int | None = None
        self._lock = threading.Lock()

    def text(self) -> str:
        """The capped block: from memory unless something was announced, or the interval passed."""
        heard = self._listener.heard(self.target.profile, self.target.name) if self._listener else None
        if heard is not None:
            if heard == self._heard:
                return self._text
        else:
            now = time.monotonic_ns()
            if self._checked_at is not None and now - self._checked_at < self._interval_ns:
                return self._text
        return self._refresh(heard)

    def _refresh(self, heard: Any) -> str:
        with self._lock:
            self._checked_at = time.monotonic_ns()
            try:
                store = self._opened()
                # Nothing held yet: read the block at once. Else the hash first, and the text only if it moved.
                if self._version is None or block_version(store, self.target.name) != self._version:
                    self._load(store)
                self._heard = heard
                self.problems.recovered()
            except PersonaError as error:
                self.problems.warn(f"cannot read the persona block of profile {self.target.profile!r} ({error}); "
                                   "injecting the last one read")
            return self._text

    def read(self) -> str:
        """The block now, capped; MissingBlock before its first render, PersonaError when the store fails."""
        found = read_block(self._open(), self.target.name)
        if found is None:
            raise MissingBlock(f"no block rendered yet for target {self.target.name!r}")
        return self._capped(found)

    def describe(self, error: BaseException) -> str:
        """One line for a failed :meth:`read`, for warnings."""
        return str(error)

    def _load(self, store: PersonaStore) -> None:
        found = read_block(store, self.target.name)
        if found is None:
            self._text, self._version = "", None
            return
        self._text = self._capped(found)
        self._version = found.sha256

    def _capped(self, found: StoredBlock) -> str:
        known = found.tokens if found.counter == self.counter else None
        return cap_block(found.text, self.target, self.counter, known_tokens=known)

    def _open(self) -> PersonaStore:
        with self._lock:
            return self._opened()

    def _opened(self) -> PersonaStore:
        if self._store is None:
            self._store = PersonaStore.from_settings(self.settings, session=self.target.profile,
                                                     readonly=True, prompt_path=True)
            if self._store.backend.features.announces:
                from ..store.postgres.listen import listener_for  # the listener thread only for a server

                self._listener = listener_for(str(store_target(self.settings)))
        return self._store

    def close(self) -> None:
        with self._lock:
            if self._store is not None and self._owns_store:
                self._store.close()
                self._store = None
