"""Hearing about new blocks without polling: one ``LISTEN persona_blocks`` connection per server and process.

Injectors ask :meth:`BlockListener.heard` on their warm path; it reads a dict
and makes no syscall and no query. While the listener is connected, an
unchanged answer means no new block was committed for that profile and
target. Whenever it is not connected (starting, or after the server went
away), injectors fall back to a cheap generation query every
``injection.check_interval_ms``, and every (re)connection bumps ``epoch`` so
nothing announced during a gap is missed.
"""

from __future__ import annotations

import logging
import threading

from ...config.urls import scrub
from ..blocks import CHANNEL, parse_announcement

log = logging.getLogger(__name__)

RETRY_MAX_S = 5.0
WAIT_S = 1.0  # how often the thread looks up from the socket to see whether it should stop

Heard = tuple[int, int]  # (epoch, announcements heard for one profile and target)


class BlockListener:
    def __init__(self, url: str) -> None:
        self.url = url
        self.epoch = 0
        self.connected = False
        self._counts: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()
        self._up = threading.Event()
        self._thread = threading.Thread(target=self._run, name="persona-listen", daemon=True)
        self._thread.start()

    def heard(self, profile: str, target: str) -> Heard | None:
        """What has been heard for this block so far; None while not connected (then poll instead)."""
        if not self.connected:
            return None
        return self.epoch, self._counts.get((profile, target), 0)

    def wait_connected(self, timeout: float) -> bool:
        """Whether the listener is connected, waiting up to ``timeout`` seconds for it."""
        self._up.wait(timeout)
        return self.connected

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=WAIT_S * 3)

    def _run(self) -> None:
        import psycopg

        delay = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.epoch += 1
                    self.connected = True
                    self._up.set()
                    delay = 0.1
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=WAIT_S):
                            self._hear(note.payload)
            except psycopg.Error as error:
                if self.connected:
                    said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                    log.warning("lost the block listener's connection (%s); injectors poll until it is back",
                                scrub(said, self.url))
            finally:
                self.connected = False
                self._up.clear()
            self._stop.wait(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def _hear(self, payload: str) -> None:
        parsed = parse_announcement(payload)
        if parsed is None:
            return
        key = (parsed[0], parsed[1])
        self._counts[key] = self._counts.get(key, 0) + 1


_LISTENERS: dict[str, BlockListener] = {}
_LOCK = threading.Lock()


def listener_for(url: str) -> BlockListener:
    """The process's listener for ``url``, started on first use."""
    with _LOCK:
        listener = _LISTENERS.get(url)
        if listener is None:
            listener = _LISTENERS[url] = BlockListener(url)
        return listener


def stop_listener(url: str) -> None:
    with _LOCK:
        listener = _LISTENERS.pop(url, None)
    if listener is not None:
        listener.close()
