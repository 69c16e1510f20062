"""Passwords out of everything we show: a store URL may carry one (postgresql://user:secret@host/db)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

HIDDEN = "***"


def redact_url(url: str) -> str:
    """The URL without its password, for messages, logs and `config show`."""
    parts = urlsplit(url)
    try:
        if parts.password is None:
            return url
        port = parts.port
    except ValueError:  # a port that is not a number: show neither it nor anything after the scheme
        return f"{parts.scheme}://{parts.username or ''}:{HIDDEN}@{parts.hostname or ''}/..."
    netloc = f"{parts.username or ''}:{HIDDEN}@{parts.hostname or ''}" + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def redact(value: Any) -> Any:
    """``value`` with the password hidden if it is a URL string; anything else unchanged."""
    return redact_url(value) if isinstance(value, str) and "://" in value else value
