"""A loopback TCP proxy a test can freeze: the stand-in for a server or network that stops answering.

``freeze()`` stops forwarding bytes in both directions without closing any
socket, as a hung server or a black-holed network does: the client's kernel
still sees an open, acknowledged connection. ``thaw()`` resumes.
``end_quietly()`` ends every open connection on the server's side while the
client's side stays open and hears nothing, until it sends: then its
connection closes and what it sent reaches no server. That is an idle pooled
connection the server ended while the client could not know yet. The proxy is
bounded: a freeze ends by itself after ``max_freeze_s``, and the whole proxy
shuts down after ``lifetime_s``, so a failing test never leaves it running.
Loopback only, on both sides.
"""

from __future__ import annotations

import socket
import threading
import time
from contextlib import suppress
from types import TracebackType

LOOPBACK = "127.0.0.1"
CHUNK = 65536
POLL_S = 0.1  # how often a blocked thread looks up to see whether the proxy is stopping


class FreezableProxy:
    """Listens on 127.0.0.1 at an ephemeral port and forwards each connection to ``upstream``."""

    def __init__(self, upstream_port: int = 5432, *, lifetime_s: float = 120.0, max_freeze_s: float = 60.0) -> None:
        self.upstream = (LOOPBACK, upstream_port)
        self.max_freeze_s = max_freeze_s
        self._ends_at = time.monotonic() + lifetime_s
        self._thawed = threading.Event()
        self._thawed.set()
        self._frozen_until = 0.0
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._quiet: set[socket.socket] = set()  # clients whose server side end_quietly() closed
        self._guard = threading.Lock()
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.settimeout(POLL_S)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name="freezable-proxy", daemon=True)
        self._thread.start()

    def url(self, base: str) -> str:
        """``base`` (a postgresql:// URL on 127.0.0.1:<upstream>) pointed at this proxy instead."""
        host = f"{LOOPBACK}:{self.upstream[1]}"
        assert host in base, f"{base} does not name {host}"
        return base.replace(host, f"{LOOPBACK}:{self.port}", 1)

    def freeze(self) -> None:
        """Stop forwarding, keeping every socket open; new connections are accepted and then hang too."""
        self._frozen_until = time.monotonic() + self.max_freeze_s
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def end_quietly(self) -> None:
        """End each open connection's server side; its client hears of it only when it next sends."""
        with self._guard:
            for client, server in self._pairs:
                self._quiet.add(client)
                _close(server)

    def close(self) -> None:
        self._stop.set()
        self._thawed.set()
        self._thread.join(timeout=5)
        with self._guard:
            for sock in self._sockets:
                _close(sock)
            self._sockets.clear()
        _close(self._listener)

    def __enter__(self) -> FreezableProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
                 ) -> None:
        self.close()

    # -- forwarding -----------------------------------------------------

    def _running(self) -> bool:
        if time.monotonic() >= self._ends_at:
            self._stop.set()
        return not self._stop.is_set()

    def _accept_loop(self) -> None:
        while self._running():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connect(client)
        self.close_sockets()

    def close_sockets(self) -> None:
        with self._guard:
            for sock in self._sockets:
                _close(sock)

    def _connect(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            _close(client)
            return
        with self._guard:
            self._sockets += [client, server]
            self._pairs.append((client, server))
        for source, sink in ((client, server), (server, client)):
            source.settimeout(POLL_S)
            threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while self._running():
            try:
                data = source.recv(CHUNK)
            except TimeoutError:
                continue
            except OSError:
                break
            if source in self._quiet:  # the client spoke to a server that is gone: now it hears so
                break
            if not data or not self._wait_thawed():
                break
            if not self._send(sink, data):
                break
        _close(source)
        if sink not in self._quiet:  # the client of a quietly ended connection hears nothing until it sends
            _close(sink)

    def _send(self, sink: socket.socket, data: bytes) -> bool:
        view = memoryview(data)
        while view and self._running():
            try:
                view = view[sink.send(view):]
            except TimeoutError:
                continue
            except OSError:
                return False
        return not view

    def _wait_thawed(self) -> bool:
        """Hold the bytes while frozen (the freeze ends by itself after max_freeze_s); False if stopping."""
        while not self._thawed.wait(POLL_S):
            if not self._running():
                return False
            if time.monotonic() >= self._frozen_until:
                self._thawed.set()
        return self._running()


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.close()
