"""A client-side bound on every statement sent to a server: one thread per process cuts a connection that went silent.

The server's ``statement_timeout`` cannot help when the server, or the
network to it, is frozen: nothing answers, not even a cancel request. TCP
keepalives and ``tcp_user_timeout`` see a dead network only after the kernel's
retries, and never a server whose process stopped while its kernel still
acknowledges. So each statement is armed with a deadline; past it, the
watchdog shuts the connection's socket down, the blocked call fails at once,
and the pool discards the connection.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass


@dataclass(slots=True)
class Watch:
    """One armed statement; ``fired`` says the watchdog cut its connection."""

    deadline: float
    fileno: int
    fired: bool = False


class Watchdog:
    def __init__(self) -> None:
        self._armed: dict[int, Watch] = {}
        self._tokens = itertools.count()
        self._cond = threading.Condition()
        self._wake_at: float | None = None
        self._thread: threading.Thread | None = None

    @contextmanager
    def bound(self, fileno: int, seconds: float | None) -> Iterator[Watch]:
        """Cut the socket ``fileno`` if the block has not ended within ``seconds`` (None: no bound)."""
        watch = Watch(time.monotonic() + seconds if seconds is not None else float("inf"), fileno)
        if seconds is None:
            yield watch
            return
        token = next(self._tokens)
        with self._cond:
            self._armed[token] = watch
            self._start()
            if self._wake_at is None or watch.deadline < self._wake_at:
                self._cond.notify()
        try:
            yield watch
        finally:
            with self._cond:  # once disarmed under the lock, this socket is never cut: it may be lent out again
                self._armed.pop(token, None)

    def _start(self) -> None:
        # A forked child inherits no thread: start one there too.
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="persona-watchdog", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for token, watch in list(self._armed.items()):
                    if watch.deadline <= now:
                        del self._armed[token]
                        watch.fired = True
                        _cut(watch.fileno)
                self._wake_at = min((w.deadline for w in self._armed.values()), default=None)
                self._cond.wait(None if self._wake_at is None else self._wake_at - now)


def _cut(fileno: int) -> None:
    """Shut the socket down for every descriptor of it: the thread blocked on it reads end-of-file at once."""
    with suppress(OSError):
        sock = socket.socket(fileno=os.dup(fileno))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


WATCHDOG = Watchdog()
