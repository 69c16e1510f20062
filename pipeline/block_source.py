"""`injection.source: store`: the injected target's block, read from the database.

The warm path makes no query. On PostgreSQL it asks the process's block
listener whether anything was announced for this profile and target, and
checks the block's hash anyway once per ``injection.poll_floor_ms``;
elsewhere (SQLite, or while the listener is down) it checks the hash at most
once per ``injection.check_interval_ms``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any

from .block import stored_block_of
from .blocks import block_version, read_bounded
from .errors import PersonaError
from .problems import ProblemLog
from .settings import ResolvedTarget, Settings, store_target
from .store import PersonaStore, is_server_url

log = logging.getLogger(__name__)


class BlockSource:
    def __init__(self, settings: Settings, target: ResolvedTarget, problems: ProblemLog) -> None:
        self.settings = settings
        self.target = target
        self.problems = problems
        self.counter = settings.cap.counter
        self._interval_ns = settings.injection.check_interval_ms * 1_000_000
        self._floor_ns = settings.injection.poll_floor_ms * 1_000_000
        self._unwatch: weakref.finalize[Any, Any] | None = None
        self._store: PersonaStore | None = None
        self._listener: Any = None
        self._heard: Any = None
        self._version: str | None = None
        self._text = ""
        self._checked_at: int | None = None
        self._lock = threading.Lock()

    def text(self) -> str:
        """The capped block: from memory unless something was announced, or the interval (or floor) passed."""
        heard = self._listener.heard(self.target.profile, self.target.name) if self._listener else None
        if heard is None or heard == self._heard:
            wait_ns = self._interval_ns if heard is None else self._floor_ns
            if self._checked_at is not None and time.monotonic_ns() - self._checked_at < wait_ns:
                return self._text
        return self._refresh(heard)

    def _refresh(self, heard: Any) -> str:
        with self._lock:
            self._checked_at = time.monotonic_ns()
            try:
                store = self._open()
                # Nothing held yet: read the block at once. Else the hash first, and the text only if it moved.
                if self._version is None or block_version(store, self.target.name) != self._version:
                    self._load(store)
                self._heard = heard
                self.problems.recovered()
            except PersonaError as error:
                self.problems.warn(f"cannot read the persona block of profile {self.target.profile!r} ({error}); "
                                   "injecting the last one read")
            return self._text

    def _load(self, store: PersonaStore) -> None:
        max_bytes = self.settings.injection.max_file_bytes
        found = read_bounded(store, self.target.name, max_bytes)
        if found is None:
            self._text, self._version = "", None
            return
        self._text = stored_block_of(found, self.target, counter=self.counter, max_bytes=max_bytes,
                                     problems=self.problems)
        self._version = found.sha256

    def _open(self) -> PersonaStore:
        if self._store is None:
            injection = self.settings.injection
            self._store = PersonaStore.from_settings(self.settings, session=self.target.profile,
                                                     busy_timeout_ms=injection.busy_timeout_ms, readonly=True)
            url = store_target(self.settings)
            if is_server_url(url):
                self._listen(str(url))
        return self._store

    def _listen(self, url: str) -> None:
        from .store.listen import listener_for  # the listener thread only for a server

        listener = self._listener = listener_for(url, self.settings.injection.listen_ping_ms)
        listener.watch(self.target.profile, self.target.name)
        # The listener counts announcements only for blocks some source still injects: a source dropped
        # without close() stops being counted when it is collected.
        self._unwatch = weakref.finalize(self, listener.unwatch, self.target.profile, self.target.name)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
            if self._unwatch is not None:
                self._unwatch()
            self._unwatch = self._listener = self._heard = None
