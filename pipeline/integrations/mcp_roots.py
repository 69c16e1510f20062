"""An MCP client's roots, read strictly: the one place that decides whether a root names a directory.

A client's ``roots/list`` answer reaches the server in a response (handshake-era protocol) or inside a retried
request's ``inputResponses`` (2026-07-28). The SDK validates either against its own model and fails the whole
tool call when one root is not a ``file:`` URL, and a ``file:`` URL holding ``%00`` passes its check and breaks
every path operation after it. So the wire checks each answer before the SDK sees it: an answer holding any
root that fails :func:`root_directory` is replaced by an empty list, which every reader takes as "no project
known" (global facts; a project scope refused with the usual message), never as a broken session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def root_directory(uri: object) -> Path | None:
    """The local directory a root's URI names, or None when it names none we can trust: not text, not a
    ``file:`` URL of this host, a path that is not absolute, not UTF-8 once unquoted, or holding a NUL."""
    if not isinstance(uri, str):
        return None
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    try:
        path = unquote(parsed.path, errors="strict")
    except UnicodeDecodeError:
        return None
    return Path(path) if path.startswith("/") and "\0" not in path else None


def void_malformed_roots(message: dict[str, Any]) -> bool:
    """Empty every roots answer in a client's frame that holds a root :func:`root_directory` refuses; whether
    the frame changed (and must be sent on re-encoded)."""
    answers = [message.get("result")]
    params = message.get("params")
    if isinstance(params, dict) and isinstance(params.get("inputResponses"), dict):
        answers.extend(params["inputResponses"].values())
    changed = False
    for answer in answers:
        if isinstance(answer, dict) and _malformed(answer.get("roots")):
            answer["roots"] = []
            changed = True
    return changed


def _malformed(roots: object) -> bool:
    if not isinstance(roots, list):
        return False  # not a roots answer (or not one the SDK would take: it answers that itself)
    return any(not isinstance(root, dict) or root_directory(root.get("uri")) is None for root in roots)
