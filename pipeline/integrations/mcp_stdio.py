"""The MCP server's stdio wire: every frame gets an answer, a malformed one a JSON-RPC error.

The SDK's stdio reader drops a line it cannot parse (garbage, a JSON array,
a lone surrogate, bytes that are not UTF-8) without a reply, so a client
waits forever. This reader checks each line first: a frame that is not JSON
is answered with a parse error (-32700), one that is JSON but not a JSON-RPC
message with an invalid-request error (-32600), both with ``id`` null unless
the object carried a usable one. Only well-formed frames reach the SDK.
A blank line is not a frame and is skipped.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, suppress
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

from .mcp_roots import void_malformed_roots

# A tool call is a few kilobytes; a bound keeps one endless line from filling the server's memory.
MAX_FRAME_BYTES = 1 << 20
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# Deeper than any MCP message nests, and far below the recursion limits of the parsers after this check (the
# standard json module's, pydantic's): a line of 100,000 '[' must be an error reply, not a RecursionError.
MAX_DEPTH = 100
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # a JSON string: its brackets are text
_NOT_BRACKET = bytes(code for code in range(256) if code not in b"[]{}")


def error_reply(code: int, message: str, request_id: str | int | None = None) -> str:
    """One JSON-RPC error response, as a line."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def check_frame(line: bytes) -> tuple[str | None, str | None]:
    """(the frame's text for the SDK, None) when it is a JSON-RPC message, else (None, the error reply)."""
    if too_deep(line):
        return None, error_reply(PARSE_ERROR, f"Parse error: the frame nests arrays and objects more than "
                                              f"{MAX_DEPTH} deep")
    try:
        text = line.decode("utf-8")
        message = json.loads(text, parse_constant=_no_constant)
        json.dumps(message, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape cannot be encoded
    except UnicodeDecodeError:
        return None, error_reply(PARSE_ERROR, "Parse error: the frame is not valid UTF-8 text")
    except UnicodeEncodeError:
        return None, error_reply(PARSE_ERROR, "Parse error: the frame escapes a lone surrogate, which is no "
                                              "character")
    except ValueError as error:
        return None, error_reply(PARSE_ERROR, f"Parse error: {error}")
    if not isinstance(message, dict):
        return None, error_reply(INVALID_REQUEST, "Invalid Request: a frame must be one JSON object "
                                                  "(MCP has no batches)")
    if void_malformed_roots(message):  # a root the SDK would choke on means no project known, not a broken call
        text = json.dumps(message, ensure_ascii=False)
    return _check_message(text, message)


def too_deep(line: bytes) -> bool:
    """Whether the frame nests brackets deeper than :data:`MAX_DEPTH`, found without parsing it (a loop, no
    recursion): only the brackets outside strings count."""
    depth = 0
    for bracket in _STRING.sub(b"", line).translate(None, _NOT_BRACKET):
        depth += 1 if bracket in b"[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False


def _check_message(text: str, message: dict[str, Any]) -> tuple[str | None, str | None]:
    import mcp_types
    import pydantic

    request_id = message.get("id")
    usable_id = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
    try:
        parsed = mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except pydantic.ValidationError as error:
        where = ", ".join(".".join(map(str, e["loc"])) or "frame" for e in error.errors()[:3])
        return None, error_reply(INVALID_REQUEST, f"Invalid Request: not a JSON-RPC 2.0 message ({where})",
                                 usable_id)
    if "id" in message and isinstance(parsed, mcp_types.JSONRPCNotification):
        # The SDK would take it for a notification and never answer the id the client waits on.
        return None, error_reply(INVALID_REQUEST, "Invalid Request: an id must be a string or an integer")
    return text, None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


class WireOut:
    """The protocol's stdout, shared by the SDK's writer and our error replies: one whole line at a time."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._stream.write, text.encode("utf-8"))

    async def flush(self) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._stream.flush)

    async def reply(self, line: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_line, line)

    def _write_line(self, line: str) -> None:
        self._stream.write(line.encode("utf-8") + b"\n")
        self._stream.flush()


class WireIn:
    """The protocol's stdin as the SDK iterates it: well-formed frames only; the rest answered on ``out``."""

    def __init__(self, stream: BinaryIO, out: WireOut) -> None:
        self._stream = stream
        self._out = out

    def __aiter__(self) -> AsyncIterator[str]:
        return self._frames()

    async def _frames(self) -> AsyncIterator[str]:
        while (line := await anyio.to_thread.run_sync(read_frame, self._stream, abandon_on_cancel=True)) is not None:
            if not line.strip():
                continue
            text, error = check_frame(line) if len(line) <= MAX_FRAME_BYTES else (None, _too_long())
            if error is not None:
                await self._out.reply(error)
            else:
                yield text  # type: ignore[misc]  # text is set whenever error is not


def _too_long() -> str:
    return error_reply(INVALID_REQUEST, f"Invalid Request: the frame is longer than {MAX_FRAME_BYTES} bytes")


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next line without its line end; None at end of input. A line past the bound is read to its end
    and dropped: what comes back is then just longer than :data:`MAX_FRAME_BYTES`."""
    line = stream.readline(MAX_FRAME_BYTES + 1)
    if not line:
        return None
    if len(line) > MAX_FRAME_BYTES and not line.endswith(b"\n"):
        while (rest := stream.readline(MAX_FRAME_BYTES)) and not rest.endswith(b"\n"):
            pass
        return line
    return line.rstrip(b"\r\n")


@contextmanager
def claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire's stdin and stdout on private descriptors.

    Meanwhile fd 0 reads the null device and fd 1 writes to stderr, as in the
    SDK's own transport, so a stray print or a child process cannot corrupt
    the protocol. Both are restored on exit. The private descriptors are never
    closed: a reader thread may still be blocked on one.
    """
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    stdout = os.fdopen(wire_out, "wb", closefd=False)
    try:
        yield os.fdopen(wire_in, "rb", closefd=False), stdout
    finally:
        with suppress(OSError, ValueError):
            stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
