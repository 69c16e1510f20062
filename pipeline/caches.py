"""The one home of every in-process cache: each is declared here, by the module that owns it, with its owner, its
key, its bound and whether it holds fact text.

A cache keeps what a full computation gave, to give it again while its key holds. Each is one of four shapes:
:func:`memo` (a function's results by its arguments, in the manner of ``functools.lru_cache``), :func:`cache`
(a map its owner reads and writes), :func:`per_object` (such a map made by each object of a class) and
:func:`holders` (objects that keep their last text between calls, each able to drop it). Each is bounded (a
map's least recently used entry goes first) and safe from any thread. ``owner`` says how long an entry can matter:

- ``process``: as long as the process (compiled templates, stemmers, a word's forms);
- ``settings``: what settings derive (a target's plan, a fingerprint);
- ``profile``: one profile's (its kept rows, its last render's parts);
- ``run``: one render's (dropped when it ends).

A cache that ``holds_text`` may hold a fact's text: ``persona forget`` (every way in) clears them all
(:func:`clear_fact_text`), and a long-running process of ours (the MCP server, the Hermes plugin) compares the
store's erasure stamp before it answers (:func:`erasure_seen`), so a forget in another process reaches it too.
``tests/test_layout.py`` fails on a ``functools`` cache or a module-level memo map anywhere but here, and
``docs/architecture.md``'s "Copies we keep" lists every declaration (:func:`declared`).
"""

from __future__ import annotations

import functools
import gc
import threading
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, ParamSpec, Protocol, TypeVar, cast

Owner = Literal["process", "settings", "profile", "run"]
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Declaration:
    """What one cache is: its name (``module.what``), owner, key (in words), bound and whether it holds fact text."""

    name: str
    owner: Owner
    key: str
    bound: int
    holds_text: bool


class _Declared(ABC):
    """Something declared here: each shape (the three below) clears and shows its own store."""

    declaration: Declaration

    @abstractmethod
    def clear(self) -> None:
        """Drop every entry."""

    @abstractmethod
    def entries(self) -> list[Any]:
        """What it holds now (for ``caches.entries`` and the tests that look for a forgotten text)."""


_REGISTRY: dict[str, _Declared] = {}  # every cache by name: the registry itself, filled as modules load
_guard = threading.Lock()


def _register(item: _Declared) -> None:
    with _guard:
        if item.declaration.name in _REGISTRY:
            raise ValueError(f"a cache named {item.declaration.name!r} is declared twice")
        if item.declaration.bound < 1:
            raise ValueError(f"cache {item.declaration.name!r}: a bound of at least 1 is needed")
        _REGISTRY[item.declaration.name] = item


class Cache(_Declared, Generic[K, V]):
    """A bounded map, least recently used first out, safe from any thread (its lock is held only around the map)."""

    def __init__(self, declaration: Declaration, on_evict: Callable[[K, V], None] | None = None,
                 kind: Kind | None = None) -> None:
        self.declaration = declaration
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self._on_evict = on_evict
        self._kind = kind

    def __copy__(self) -> Cache[K, V]:
        """A copy starts empty (what it would hold is made again on demand), as its kind's (an object's copy)."""
        return self._kind.new() if self._kind is not None else Cache(self.declaration, self._on_evict)

    def __deepcopy__(self, memo: dict[int, Any]) -> Cache[K, V]:
        return self.__copy__()

    def get(self, key: K, default: V | None = None) -> V | None:
        with self._lock:
            try:
                self._items.move_to_end(key)  # one lookup when it is there (the warm path's case)
            except KeyError:
                return default
            return self._items[key]

    def put(self, key: K, value: V) -> list[V]:
        """Keep ``value`` as the most recent; the values evicted to make room (``on_evict`` has seen each)."""
        evicted: list[tuple[K, V]] = []
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.declaration.bound:
                evicted.append(self._items.popitem(last=False))
        self._evicted(evicted)
        return [value for _, value in evicted]

    def replace(self, key: K, value: V) -> None:
        """Replace a kept value, leaving its place in the order as it was (nothing when ``key`` is not kept)."""
        with self._lock:
            if key in self._items:
                self._items[key] = value

    def drop(self, which: Callable[[K], bool]) -> None:
        """Drop every entry whose key ``which`` picks."""
        for key in [key for key in self.keys() if which(key)]:
            self.pop(key)

    def items(self) -> list[tuple[K, V]]:
        return self._snapshot()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The entry for ``key``, made (outside the lock: two threads may both make it) when missing."""
        found = self.get(key, cast("V", _ABSENT))
        if found is not _ABSENT:
            return cast("V", found)
        made = make()
        self.put(key, made)
        return made

    def pop(self, key: K) -> V | None:
        with self._lock:
            value = self._items.pop(key, None)
        if value is not None:
            self._evicted([(key, value)])
        return value

    def clear(self) -> None:
        with self._lock:
            evicted, self._items = list(self._items.items()), OrderedDict()
        self._evicted(evicted)

    def keys(self) -> list[K]:
        with self._lock:
            return list(self._items)

    def entries(self) -> list[Any]:
        with self._lock:
            return [item for pair in self._items.items() for item in pair]

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def __eq__(self, other: object) -> bool:
        """Equal to a map of the same entries (an object that holds one compares as if it held a dict)."""
        if not isinstance(other, Cache):
            return NotImplemented
        return dict(self._snapshot()) == dict(other._snapshot())

    __hash__ = None  # type: ignore[assignment]  # equal by its entries, which change

    def _snapshot(self) -> list[tuple[K, V]]:
        with self._lock:
            return list(self._items.items())

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def _evicted(self, pairs: list[tuple[K, V]]) -> None:
        if self._on_evict is not None:
            for key, value in pairs:
                self._on_evict(key, value)


_ABSENT: Any = object()


def cache(name: str, *, owner: Owner, key: str, bound: int, holds_text: bool,
          on_evict: Callable[[Any, Any], None] | None = None) -> Cache[Any, Any]:
    """Declare a map named ``name`` (``module.what``): see the module. ``on_evict`` runs for each entry that goes
    (an open connection pool is closed, say)."""
    made: Cache[Any, Any] = Cache(Declaration(name, owner, key, bound, holds_text), on_evict)
    _register(made)
    return made


class _Memo(_Declared):
    def __init__(self, declaration: Declaration, function: Callable[..., Any]) -> None:
        self.declaration = declaration
        self.function = function

    def clear(self) -> None:
        self.function.cache_clear()  # type: ignore[attr-defined]

    def entries(self) -> list[Any]:
        # lru_cache's C implementation shows its keys and results to the garbage collector alone.
        own = (self.function.__wrapped__, self.function.__dict__)  # type: ignore[attr-defined]
        return [found for found in gc.get_referents(self.function)
                if not isinstance(found, type) and type(found) is not object and not any(found is o for o in own)]


def memo(name: str, *, owner: Owner, key: str, bound: int, holds_text: bool = False
         ) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Declare a function's results kept by its (hashable) arguments, at most ``bound`` of them: a decorator, as
    ``functools.lru_cache`` is (whose C implementation keeps it as fast)."""
    def declare(function: Callable[P, R]) -> Callable[P, R]:
        kept = functools.lru_cache(maxsize=bound)(function)
        _register(_Memo(Declaration(name, owner, key, bound, holds_text), kept))
        return cast("Callable[P, R]", kept)
    return declare


class Kind(_Declared):
    """One declaration whose maps are made per object (a plugin's, a server's): each holds its own entries, and
    clearing the declaration clears every one of them still alive."""

    def __init__(self, declaration: Declaration, on_evict: Callable[[Any, Any], None] | None) -> None:
        self.declaration = declaration
        self._on_evict = on_evict
        self._made: list[weakref.ref[Cache[Any, Any]]] = []  # by identity: a map is equal to another by its entries
        self._lock = threading.Lock()

    def new(self) -> Cache[Any, Any]:
        """A map of this declaration for one object (its bound is each map's)."""
        made: Cache[Any, Any] = Cache(self.declaration, self._on_evict, self)
        with self._lock:
            self._made = [ref for ref in self._made if ref() is not None]
            self._made.append(weakref.ref(made))
        return made

    def clear(self) -> None:
        for each in self._maps():
            each.clear()

    def entries(self) -> list[Any]:
        return [entry for each in self._maps() for entry in each.entries()]

    def _maps(self) -> list[Cache[Any, Any]]:
        with self._lock:
            return [made for ref in self._made if (made := ref()) is not None]


def per_object(name: str, *, owner: Owner, key: str, bound: int, holds_text: bool,
               on_evict: Callable[[Any, Any], None] | None = None) -> Kind:
    """Declare the maps an object of ``name``'s module makes for itself (:meth:`Kind.new`), as :func:`cache`
    declares one map."""
    made = Kind(Declaration(name, owner, key, bound, holds_text), on_evict)
    _register(made)
    return made


class TextHolder(Protocol):
    """An object that keeps what it last read or gave between calls (a source's text, a session's last good
    persona): it can show what it holds and drop it."""

    def drop_text(self) -> None:
        """Forget what it holds; the next call reads again."""

    def held_text(self) -> list[str]:
        """What it holds now."""


class Holders(_Declared):
    """One declaration for the objects of a class that keep text between calls: each registers itself as it is
    made (weakly: it leaves when it is collected), and clearing the declaration has every one still alive drop
    what it holds."""

    def __init__(self, declaration: Declaration) -> None:
        self.declaration = declaration
        self._alive: weakref.WeakSet[TextHolder] = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, holder: TextHolder) -> None:
        with self._lock:
            self._alive.add(holder)

    def clear(self) -> None:
        for holder in self._holders():
            holder.drop_text()

    def entries(self) -> list[Any]:
        return [text for holder in self._holders() for text in holder.held_text()]

    def _holders(self) -> list[TextHolder]:
        with self._lock:
            return list(self._alive)


def holders(name: str, *, owner: Owner, key: str, bound: int, holds_text: bool) -> Holders:
    """Declare the objects of ``name``'s module that keep text between calls (each calls :meth:`Holders.add` as
    it is made); ``bound`` is what one object keeps."""
    made = Holders(Declaration(name, owner, key, bound, holds_text))
    _register(made)
    return made


def declared() -> list[Declaration]:
    """Every cache declared so far (the modules that declare them loaded), by name."""
    with _guard:
        return sorted((item.declaration for item in _REGISTRY.values()), key=lambda found: found.name)


def entries(name: str) -> list[Any]:
    """The keys and values the cache ``name`` holds now, for a test or a debugger to look into."""
    with _guard:
        item = _REGISTRY[name]
    return item.entries()


def clear_fact_text() -> list[str]:
    """Clear every cache that may hold a fact's text (a forget's last step, in this process); their names."""
    with _guard:
        holding = [item for item in _REGISTRY.values() if item.declaration.holds_text]
    for item in holding:
        item.clear()
    return sorted(item.declaration.name for item in holding)


def clear_all() -> None:
    """Clear every cache (a test between cases, a process that starts over)."""
    with _guard:
        items = list(_REGISTRY.values())
    for item in items:
        item.clear()


_ERASURES = cache("caches.erasures", owner="process", key="a store, by its label", bound=256,
                  holds_text=False)


def erasure_seen(store: Hashable, stamp: str | None) -> bool:
    """Compare ``store``'s erasure stamp with the last one this process saw: when it moved (a forget elsewhere), or
    this is the first look (text may have been kept before it), clear every cache that holds fact text; True when
    anything was cleared for a stamp that moved."""
    if stamp is None:
        return False
    last = _ERASURES.get(store)
    if last == stamp:
        return False
    clear_fact_text()
    _ERASURES.put(store, stamp)
    return last is not None
