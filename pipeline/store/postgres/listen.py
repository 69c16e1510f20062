"""Hearing about new blocks without polling: one LISTEN connection per deployment and process.

Injectors ask :meth:`BlockListener.heard` on their warm path; it reads a dict
and the clock, and makes no query. While the listener is healthy, an
unchanged answer means no new block was announced for that profile and
target. Whenever it is not (starting, reconnecting, or not having heard its
own ping for twice ``injection.listen_ping_ms``), ``heard`` says None and
injectors fall back to a cheap hash query every ``injection.check_interval_ms``.
Every (re)connection and every recovery bumps ``epoch``, so nothing announced
during a gap is missed.

The channel is open to any role that can connect, with no privilege at all,
so nothing heard on it is trusted: payloads are parsed strictly, any failure
only reconnects, and counts are kept only for the (profile, target) pairs
this process injects (:meth:`watch`), however many distinct keys arrive.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any

from ... import caches
from ...config.urls import scrub
from ..blocks import CHANNEL, parse_announcement

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.1
RETRY_MAX_S = 5.0
WAIT_S = 1.0  # how often the thread looks up from the socket to see whether it should stop
CONNECT_TIMEOUT_S = 10
MAX_ABANDONED = 2  # wedged listener threads left to time out on their own; beyond this, injectors just poll
PING = "ping\t"  # never an announcement: parse_announcement wants digits first

Key = tuple[str, str]  # (profile, target)
Heard = tuple[int, int]  # (epoch, announcements heard for one profile and target)


class BlockListener:
    def __init__(self, url: str, ping_ms: int) -> None:
        self.url = url
        self.epoch = 0
        self.connected = False
        self.backend_pid: int | None = None  # the server process of the current connection, for operators
        self._ping_s = ping_ms / 1000
        self._deadline_s = 2 * self._ping_s
        self._pong_at = 0.0
        self._watchers: dict[Key, int] = {}
        self._counts: dict[Key, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._up = threading.Event()
        self._generation = 0
        self._abandoned: list[threading.Thread] = []
        self._thread = self._start()

    def heard(self, profile: str, target: str) -> Heard | None:
        """What has been heard for this block so far; None while the listener is not healthy (then poll)."""
        if not self.connected:
            return None
        if time.monotonic() - self._pong_at > self._deadline_s:
            self._replace_wedged()
            return None
        return self.epoch, self._counts.get((profile, target), 0)

    def watch(self, profile: str, target: str) -> None:
        """Count announcements for this block from now on (until as many :meth:`unwatch` calls)."""
        with self._lock:
            key = (profile, target)
            self._watchers[key] = self._watchers.get(key, 0) + 1
            self._counts.setdefault(key, 0)

    def unwatch(self, profile: str, target: str) -> None:
        with self._lock:
            key = (profile, target)
            left = self._watchers.pop(key, 0) - 1
            if left > 0:
                self._watchers[key] = left
            else:
                self._counts.pop(key, None)

    @property
    def held(self) -> int:
        """How many blocks the listener keeps counts for: only those watched, whatever the channel carries."""
        return len(self._counts)

    def wait_connected(self, timeout: float) -> bool:
        """Whether the listener is connected, waiting up to ``timeout`` seconds for it."""
        self._up.wait(timeout)
        return self.connected

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WAIT_S * 3)

    # -- the thread ---------------------------------------------------------

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, args=(self._generation,), name="persona-listen", daemon=True)
        thread.start()
        return thread

    def _current(self, generation: int) -> bool:
        return generation == self._generation and not self._stop.is_set()

    def _replace_wedged(self) -> None:
        """Leave a thread stuck on a dead connection (a half-open socket, a failover) and listen on a new one."""
        with self._lock:
            if not self.connected or time.monotonic() - self._pong_at <= self._deadline_s:
                return  # another caller replaced it already
            self._abandoned = [thread for thread in self._abandoned if thread.is_alive()]
            self.connected = False
            self._up.clear()
            if len(self._abandoned) >= MAX_ABANDONED:
                return  # the thread's own keepalive timeout will end it, and it reconnects itself
            log.warning("the block listener has not heard its own ping for %g s; injectors poll while it reconnects",
                        self._deadline_s)
            self._abandoned.append(self._thread)
            self._generation += 1
            self._thread = self._start()

    def _run(self, generation: int) -> None:
        delay = RETRY_MIN_S
        while self._current(generation):
            started = time.monotonic()
            try:
                self._listen(generation)
            except Exception as error:  # a lost connection, or anything a hostile peer causes: reconnect
                self._lost(generation, error)
            finally:
                if self._current(generation):
                    self.connected = False
                    self._up.clear()
            delay = RETRY_MIN_S if time.monotonic() - started > RETRY_MAX_S else min(delay * 2, RETRY_MAX_S)
            self._stop.wait(delay)

    def _listen(self, generation: int) -> None:
        import psycopg

        from .backend import channel_name

        with psycopg.connect(self.url, autocommit=True, **self._connect_options()) as conn:
            channel = channel_name(conn, CHANNEL)
            conn.execute(f'LISTEN "{channel}"')
            ping = PING + secrets.token_hex(8)
            self._connected(generation, conn.info.backend_pid)
            next_ping = time.monotonic() + self._ping_s
            while self._current(generation):
                for note in conn.notifies(timeout=min(WAIT_S, max(0.0, next_ping - time.monotonic()))):
                    self._hear(note.payload, ping, generation)
                if time.monotonic() >= next_ping:
                    with conn.cursor() as cursor:  # delivered back to this connection once it commits
                        cursor.execute("SELECT pg_notify(%s, %s)", (channel, ping))
                    next_ping = time.monotonic() + self._ping_s

    def _connect_options(self) -> dict[str, Any]:
        """Keepalives and a send timeout, so the kernel ends a connection to a vanished server by itself."""
        return {"connect_timeout": CONNECT_TIMEOUT_S, "application_name": "persona-listen",
                "keepalives": 1, "keepalives_idle": max(1, int(self._ping_s)), "keepalives_interval": 1,
                "keepalives_count": 3, "tcp_user_timeout": int(self._deadline_s * 1000)}

    def _connected(self, generation: int, backend_pid: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self.backend_pid = backend_pid
            self._pong_at = time.monotonic()
            self.epoch += 1
            self.connected = True
            self._up.set()

    def _lost(self, generation: int, error: Exception) -> None:
        if self.connected and generation == self._generation:
            said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            log.warning("lost the block listener's connection (%s); injectors poll until it is back",
                        scrub(said, self.url))

    def _hear(self, payload: str, ping: str, generation: int) -> None:
        if payload == ping:
            self._pong(generation)
            return
        parsed = parse_announcement(payload)
        if parsed is None:
            log.debug("ignored a payload on the block channel that is no announcement (%d characters)", len(payload))
            return
        key = (parsed[0], parsed[1])
        with self._lock:
            if key in self._counts:
                self._counts[key] += 1

    def _pong(self, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            now = time.monotonic()
            if not self.connected or now - self._pong_at > self._deadline_s:
                self.epoch += 1  # it was unhealthy, or counted as down: every injector checks once
                self.connected = True
                self._up.set()
            self._pong_at = now


MAX_LISTENERS = 64  # (URL, ping interval) pairs a process listens for; the least recently used is stopped first


def _stop(key: tuple[str, int], listener: BlockListener) -> None:
    listener.close()


_LISTENERS = caches.cache("listen.listeners", owner="process", key="a database URL and a ping interval",
                          bound=MAX_LISTENERS, holds_text=False, on_evict=_stop)
_LOCK = threading.Lock()  # one listener per key: a second caller waits for the first's


def listener_for(url: str, ping_ms: int) -> BlockListener:
    """The process's listener for ``url``, started on first use."""
    with _LOCK:
        listener: BlockListener | None = _LISTENERS.get((url, ping_ms))
        if listener is None:
            listener = BlockListener(url, ping_ms)
            _LISTENERS.put((url, ping_ms), listener)
        return listener


def stop_listener(url: str) -> None:
    """Stop this process's listeners for ``url``."""
    with _LOCK:
        for key in [key for key in _LISTENERS if key[0] == url]:
            _LISTENERS.pop(key)  # stopped as it goes
