"""A counting TCP relay in front of PostgreSQL, for `make bench-pg`'s statements and round trips.

It counts on the wire, so it counts any client code alike (this commit's and
the one it is compared with): a **round trip** is a burst of the client's
bytes sent after the server last answered, which the client then waits on
(the server flushes its answers only at a Sync, a Flush or the end of a simple
query, so statements pipelined up to one Sync are one round trip); a
**statement** is an extended-protocol Execute, or one ``;``-separated
statement of a simple Query. The relay needs the connection in clear text
(``sslmode=disable``).
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field


@dataclass
class Tally:
    """What the clients sent through the relay since the last :meth:`reset`."""

    statements: int = 0
    round_trips: int = 0
    sql: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.statements = self.round_trips = 0
            self.sql = []


def _split(text: str) -> list[str]:
    """A simple query's statements: split on ``;`` outside quotes (enough for the SQL we send)."""
    parts, current, quote = [], [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == ";":
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


class _Session:
    """One client connection: its bytes are relayed both ways and the client's messages parsed."""

    def __init__(self, client: socket.socket, server: socket.socket, tally: Tally) -> None:
        self.client, self.server, self.tally = client, server, tally
        self.buffer = b""
        self.started = False  # past the startup message (which has no type byte)
        self.answered = True  # the server sent something since the client's last burst
        self.parsed: dict[bytes, str] = {}
        self.pending = ""  # the last Parse's text, for the Execute that follows

    def run(self) -> None:
        threading.Thread(target=self._down, daemon=True).start()
        try:
            while data := self.client.recv(65536):
                self._count(data)
                self.server.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (self.client, self.server):
                with _quiet():
                    sock.shutdown(socket.SHUT_RDWR)

    def _down(self) -> None:
        try:
            while data := self.server.recv(65536):
                self.answered = True
                self.client.sendall(data)
        except OSError:
            pass
        finally:
            with _quiet():
                self.client.shutdown(socket.SHUT_RDWR)

    def _count(self, data: bytes) -> None:
        if self.started and self.answered:
            with self.tally.lock:
                self.tally.round_trips += 1
        self.answered = False
        self.buffer += data
        if not self.started:
            if len(self.buffer) < 4 or len(self.buffer) < struct.unpack("!I", self.buffer[:4])[0]:
                return
            self.buffer = self.buffer[struct.unpack("!I", self.buffer[:4])[0]:]
            self.started = True
        while len(self.buffer) >= 5:
            kind, size = self.buffer[:1], struct.unpack("!I", self.buffer[1:5])[0]
            if len(self.buffer) < 1 + size:
                return
            body, self.buffer = self.buffer[5:1 + size], self.buffer[1 + size:]
            self._message(kind, body)

    def _message(self, kind: bytes, body: bytes) -> None:
        if kind == b"Q":
            found = _split(body.rstrip(b"\0").decode(errors="replace"))
        elif kind == b"P":
            name, _, rest = body.partition(b"\0")
            self.parsed[name] = rest.partition(b"\0")[0].decode(errors="replace")
            return
        elif kind == b"B":
            _, _, rest = body.partition(b"\0")  # portal name, then the statement's
            self.pending = self.parsed.get(rest.partition(b"\0")[0], "?")
            return
        elif kind == b"E":
            found = [self.pending]
        else:
            return
        with self.tally.lock:
            self.tally.statements += len(found)
            self.tally.sql += found


class _quiet:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return exc[0] is not None and issubclass(exc[0], OSError)  # type: ignore[arg-type]


class Relay:
    """Listens on 127.0.0.1 (a free port) and relays each connection to ``host:port``, counting in ``tally``."""

    def __init__(self, host: str, port: int) -> None:
        self.tally = Tally()
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=_Session(client, server, self.tally).run, daemon=True).start()

    def close(self) -> None:
        self.listener.close()
