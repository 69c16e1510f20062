"""What the Hermes plugin keeps in memory: each cache, the key it is kept under, and how long an entry lives.

Each map is declared in :mod:`pipeline.caches` (one declaration for the maps of every plugin object), so the
ones that hold a persona's text go when a forget is seen. One lock guards every compound step over these maps;
it is held only around reads and writes of them, never across store or file I/O, so a slow store stalls only
the session (or user) waiting for it. Every map is bounded: the least recently used entries go first, and what
is evicted (or dropped by a forget) is read back from the store when it is needed again. Every key carries the
Hermes home, and every key of a persona carries the profile: two homes, two users or two stores never share an
entry.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from .. import caches
from ..clock import Throttle
from ..inject.sessions import SessionSnapshots
from .hermes_binding import BoundTools

MAX_SESSIONS = 4096  # sessions remembered in memory; older ones are read back from the database
MAX_PROFILES = 32  # open profile stores; a gateway with more users reopens the least recently used

K = TypeVar("K", bound=Hashable)


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


# Each map of PluginState, declared once for every plugin object (its owner, key, bound and whether it holds text).
SEEN = caches.per_object("hermes_state.seen", owner="profile", key="a session (home, store, profile, session id)",
                         bound=MAX_SESSIONS, holds_text=True)
PREVIOUS = caches.per_object("hermes_state.previous", owner="profile", key="a session",
                             bound=MAX_SESSIONS, holds_text=False)  # a summary's fingerprint, messages' digests
PROFILES = caches.per_object("hermes_state.profiles", owner="process",
                             key="a caller (home, gateway user or session key, project)", bound=MAX_PROFILES,
                             holds_text=False)  # open stores: a forget leaves them open, closed by whoever evicts
OPENINGS = caches.per_object("hermes_state.openings", owner="profile",
                             key="a conversation's opening (home, profile, first messages' fingerprint)",
                             bound=MAX_SESSIONS, holds_text=True)
SUBAGENTS = caches.per_object("hermes_state.subagents", owner="process", key="a Hermes home and session id",
                              bound=MAX_SESSIONS, holds_text=False)
ERASURES = caches.per_object("hermes_state.erasures", owner="profile", key="a persona (home, store, profile)",
                             bound=MAX_SESSIONS, holds_text=False)


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
    seen: caches.Cache[SessionKey, Seen] = field(default_factory=SEEN.new)
    # Each session's last request, to tell a compaction from a request that only adds messages.
    previous: caches.Cache[SessionKey, Request] = field(default_factory=PREVIOUS.new)
    # Settings, store and tools per caller; an evicted profile's store is closed by whoever evicted it.
    profiles: caches.Cache[Caller, Profile] = field(default_factory=PROFILES.new)
    # The persona a conversation opened with: a branch of it (same opening, new session id) keeps it.
    openings: caches.Cache[Opening, str] = field(default_factory=OPENINGS.new)
    # (home, session id) of delegate_task subagents: they may read the persona, never change it.
    subagents: caches.Cache[tuple[str, str], bool] = field(default_factory=SUBAGENTS.new)
    # Per persona: its erasure count as last read, checked at most once per injection.check_interval_ms.
    erasures: caches.Cache[Persona, ErasureCheck] = field(default_factory=ERASURES.new)
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
                    self.seen.replace(key, Seen(seen.boundary, seen.text, seen.recorded, stale=True))
            self.openings.drop(lambda opening: (opening.home, opening.profile) == (persona.home, persona.profile))
