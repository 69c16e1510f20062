"""What the Hermes plugin keeps in memory: each cache, the key it is kept under, and how long an entry lives.

One lock guards every map here; it is held only around reads and writes of
these maps, never across store or file I/O, so a slow store stalls only the
session (or user) waiting for it. Every map is bounded: the least recently
used entries go first, and what is evicted is read back from the store when
it is needed again. Every key carries the Hermes home, and every key of a
persona carries the profile: two homes, two users or two stores never share
an entry.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from ..clock import Throttle
from ..inject.sessions import SessionSnapshots
from .hermes_binding import BoundTools

MAX_SESSIONS = 4096  # sessions remembered in memory; older ones are read back from the database
MAX_PROFILES = 32  # open profile stores; a gateway with more users reopens the least recently used

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Caller(NamedTuple):
    """Whom a request is for, before any settings are read: the Hermes home, the gateway's names for the user, and
    the project of the session's working directory ("" for none: a gateway user has no project of theirs)."""

    home: str
    user_id: str
    session_key: str
    project: str = ""


class Persona(NamedTuple):
    """One user's persona: the Hermes home, the store (its label) and the profile."""

    home: str
    store: str
    profile: str


class SessionKey(NamedTuple):
    """One conversation of one user's persona: its :class:`Persona` and Hermes' session id."""

    home: str
    store: str
    profile: str
    session_id: str

    @property
    def persona(self) -> Persona:
        return Persona(self.home, self.store, self.profile)


class Opening(NamedTuple):
    """How a conversation began (its first messages' fingerprint), in one home and profile."""

    home: str
    profile: str
    fingerprint: str


class Request(NamedTuple):
    """What a session's last request showed: its compaction summary's fingerprint and its messages' digests."""

    marker: str | None
    digests: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Seen:
    """What a session was last given, at which compaction, and whether the store has it yet."""

    boundary: str | None
    text: str
    recorded: bool = True
    stale: bool = False  # a fact of it was forgotten: resolve again on the next request, never serve it

    @property
    def warm(self) -> bool:
        return self.recorded and not self.stale


class Profile(NamedTuple):
    """One Hermes home and user, opened: its snapshots, its tools, and the home every key of it carries."""

    snapshots: SessionSnapshots
    tools: BoundTools
    home: str

    @property
    def persona(self) -> Persona:
        return Persona(self.home, self.snapshots.store.label, self.snapshots.profile)


@dataclass(slots=True)
class ErasureCheck:
    """A user's erasure count as last read (-1: not read yet), and when it may be read again."""

    count: int
    poll: Throttle


class Recent(Generic[K, V]):
    """A map that keeps its ``limit`` most recently used entries (the caller holds the state's lock)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> list[V]:
        """Keep ``value`` as the most recent; the values evicted to make room."""
        self._items[key] = value
        self._items.move_to_end(key)
        evicted = []
        while len(self._items) > self.limit:
            evicted.append(self._items.popitem(last=False)[1])
        return evicted

    def update(self, key: K, value: V) -> None:
        """Replace a kept value, leaving its place in the order as it was."""
        if key in self._items:
            self._items[key] = value

    def drop(self, which: Callable[[K], bool]) -> None:
        for key in [key for key in self._items if which(key)]:
            del self._items[key]

    def items(self) -> Iterator[tuple[K, V]]:
        return iter(list(self._items.items()))

    def clear(self) -> list[V]:
        values = list(self._items.values())
        self._items.clear()
        return values

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)


class Gate:
    """A lock for one key; weakly held, so keys nobody is using cost nothing."""

    __slots__ = ("__weakref__", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()


@dataclass
class PluginState:
    """Everything the plugin remembers, and for how long (see the module's docstring)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # What each session was last given: a warm request is answered from here, with no I/O.
    seen: Recent[SessionKey, Seen] = field(default_factory=lambda: Recent(MAX_SESSIONS))
    # Each session's last request, to tell a compaction from a request that only adds messages.
    previous: Recent[SessionKey, Request] = field(default_factory=lambda: Recent(MAX_SESSIONS))
    # Settings, store and tools per caller; an evicted profile's store is closed by whoever evicted it.
    profiles: Recent[Caller, Profile] = field(default_factory=lambda: Recent(MAX_PROFILES))
    # The persona a conversation opened with: a branch of it (same opening, new session id) keeps it.
    openings: Recent[Opening, str] = field(default_factory=lambda: Recent(MAX_SESSIONS))
    # (home, session id) of delegate_task subagents: they may read the persona, never change it.
    subagents: Recent[tuple[str, str], bool] = field(default_factory=lambda: Recent(MAX_SESSIONS))
    # Per persona: its erasure count as last read, checked at most once per injection.check_interval_ms.
    erasures: Recent[Persona, ErasureCheck] = field(default_factory=lambda: Recent(MAX_SESSIONS))
    _session_gates: weakref.WeakValueDictionary[SessionKey, Gate] = field(
        default_factory=weakref.WeakValueDictionary)
    _caller_gates: weakref.WeakValueDictionary[Caller, Gate] = field(default_factory=weakref.WeakValueDictionary)

    def session_gate(self, key: SessionKey) -> Gate:
        """The gate that serialises one session's store I/O (and no other session's); hold on to it while
        its lock is held, or the next caller may get a new one."""
        return self._gate(self._session_gates, key)

    def caller_gate(self, key: Caller) -> Gate:
        """The gate under which one caller's settings are loaded and store opened (see :meth:`session_gate`)."""
        return self._gate(self._caller_gates, key)

    def _gate(self, gates: weakref.WeakValueDictionary[K, Gate], key: K) -> Gate:
        with self.lock:
            gate = gates.get(key)
            if gate is None:
                gate = gates[key] = Gate()
            return gate

    def mark_stale(self, persona: Persona) -> None:
        """Every session of ``persona`` resolves again at its next request (a fact was forgotten), and no
        branch inherits the persona its conversation opened with."""
        with self.lock:
            for key, seen in self.seen.items():
                if key.persona == persona:
                    self.seen.update(key, Seen(seen.boundary, seen.text, seen.recorded, stale=True))
            self.openings.drop(lambda opening: (opening.home, opening.profile) == (persona.home, persona.profile))
