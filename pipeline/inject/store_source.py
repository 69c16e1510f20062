"""`injection.source: store`: the injected target's block, read from the database.

The warm path makes no query. On PostgreSQL it asks the process's block
listener whether anything was announced for this profile and target, and
checks the block's hash anyway once per ``injection.poll_floor_ms``;
elsewhere (SQLite, or while the listener is down) it checks the hash at most
once per ``injection.check_interval_ms``.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import weakref
from typing import TYPE_CHECKING, Any

from .. import caches
from ..clock import Throttle
from ..config.targets import ResolvedTarget
from ..config.urls import store_target
from ..errors import PersonaError
from ..store import PersonaStore
from ..store.blocks import BoundedBlock, MissingBlock, block_version, read_bounded
from ..warn_once import ProblemLog
from .capped import cap_block, decoded, plausible

if TYPE_CHECKING:  # `persona status` runs without pydantic
    from ..config.schema import Settings

log = logging.getLogger(__name__)


# Each source keeps the capped block it last read (the warm path's answer, and what it serves while the store is
# away): a forget seen anywhere has it drop it.
HELD = caches.holders("store_source.held", owner="settings", key="a store target's block digest", bound=1,
                      holds_text=True)


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
        self._poll = Throttle(settings.injection.check_interval_ms)  # when no listener is healthy
        self._floor_ns = settings.injection.poll_floor_ms * 1_000_000  # when one is: a check now and then
        self._unwatch: weakref.finalize[Any, Any] | None = None
        self._store: PersonaStore | None = store
        self._owns_store = store is None
        self._listener: Any = None
        self._heard: Any = None
        self._version: str | None = None
        self._text = ""
        self._lock = threading.Lock()
        HELD.add(self)

    def text(self) -> str:
        """The capped block: from memory unless something was announced, or the interval passed."""
        heard = self._listener.heard(self.target.profile, self.target.name) if self._listener else None
        if (heard is None or heard == self._heard) and not self._poll.due(None if heard is None else self._floor_ns):
            return self._text
        return self._refresh(heard)

    def _refresh(self, heard: Any) -> str:
        with self._lock:
            self._poll.looked()
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
        found = read_bounded(self._open(), self.target.name, self.settings.injection.max_file_bytes)
        if found is None:
            raise MissingBlock(f"no block rendered yet for target {self.target.name!r}")
        return self._capped(found)

    def describe(self, error: BaseException) -> str:
        """One line for a failed :meth:`read`, for warnings."""
        return str(error)

    def drop_text(self) -> None:
        """Forget the block last read: the next :meth:`text` reads it again."""
        # No lock: a forget may be seen by a thread inside this source's refresh; a refresh racing it only reads
        # the block again.
        self._version, self._text = None, ""
        self._poll.reset()

    def held_text(self) -> list[str]:
        return [self._text] if self._text else []

    def _load(self, store: PersonaStore) -> None:
        found = read_bounded(store, self.target.name, self.settings.injection.max_file_bytes)
        if found is None:
            self._text, self._version = "", None
            return
        self._text = self._capped(found)
        self._version = found.sha256

    def _capped(self, found: BoundedBlock) -> str:
        return stored_block_of(found, self.target, counter=self.counter,
                               max_bytes=self.settings.injection.max_file_bytes, problems=self.problems)

    def _open(self) -> PersonaStore:
        with self._lock:
            return self._opened()

    def _opened(self) -> PersonaStore:
        if self._store is None:
            self._store = PersonaStore.from_settings(self.settings, profile=self.target.profile,
                                                     readonly=True, prompt_path=True)
            if self._store.backend.features.announces:
                self._listen(str(store_target(self.settings)))
        return self._store

    def _listen(self, url: str) -> None:
        from ..store.postgres.listen import listener_for  # the listener thread only for a server

        listener = self._listener = listener_for(url, self.settings.injection.listen_ping_ms)
        listener.watch(self.target.profile, self.target.name)
        # The listener counts announcements only for blocks some source still injects: a source dropped
        # without close() stops being counted when it is collected.
        self._unwatch = weakref.finalize(self, listener.unwatch, self.target.profile, self.target.name)

    def close(self) -> None:
        with self._lock:
            if self._store is not None and self._owns_store:
                self._store.close()
                self._store = None
            if self._unwatch is not None:
                self._unwatch()
            self._unwatch = self._listener = self._heard = None


def stored_block_of(found: BoundedBlock, target: ResolvedTarget, *, counter: str, max_bytes: int,
                    problems: ProblemLog) -> str:
    """The capped block of a stored row read with at most ``max_bytes`` bytes (see ``blocks.read_bounded``).

    The row's recorded token count is trusted only for the exact bytes it was
    made from: the whole text, whose sha256 is the recorded one, under the
    same counter. Another tool may have changed the text and left the count;
    such a row is counted and capped like a hand-edited file, with one warning.
    """
    what = f"stored block {target.name!r} of profile {target.profile!r}"
    known = None if found.truncated else _trusted_count(found, what, counter, target, problems)
    return cap_block(decoded(found.data, found.truncated, what, max_bytes, problems), target, counter,
                     known_tokens=known)


def _trusted_count(found: BoundedBlock, what: str, counter: str, target: ResolvedTarget,
                   problems: ProblemLog) -> int | None:
    """The row's recorded count if it was made from exactly these bytes and could be true of them, else None."""
    untrusted = f"its recorded token count is ignored and it is capped to {target.budget} tokens"
    if hashlib.sha256(found.data).hexdigest() != found.sha256:
        problems.warn(f"{what} does not match its recorded sha256 (changed outside persona-tier?); {untrusted}")
        return None
    if found.counter != counter or type(found.tokens) is not int:
        return None  # another counter's count (the settings changed): counting is all it takes
    if not plausible(found.data, found.tokens):
        problems.warn(f"{what} records {found.tokens} tokens for {len(found.data)} bytes, which no counter "
                      f"gives (changed outside persona-tier?); {untrusted}")
        return None
    return found.tokens
