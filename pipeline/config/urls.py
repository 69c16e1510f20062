"""Store URLs: checked without echoing them, and shown without their password (postgresql://user:secret@host/db).

A generated password may hold characters a URL should have encoded (``/``,
``?``, ``#``, ``@``), and the driver repeats parts of a URL it cannot parse
in its own messages. So the password is taken as everything between the
first ``:`` of the user part and the *last* ``@``, hiding too much rather
than too little, and driver text is scrubbed of it and of its pieces.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from .. import inputs
from ..fs.locations import default_database, default_db_path

if TYPE_CHECKING:
    from .schema import Settings

HIDDEN = "***"
QUERY_PASSWORD = re.compile(r"(?i)(\bpassword=)([^&#\s]*)")
MIN_PIECE = 3  # shorter pieces of a password are left alone: they would blank ordinary words


def _split(url: str) -> tuple[str, str, str | None, str] | None:
    """(scheme, user, password, host and the rest), or None when the text is not a URL."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return None
    at = rest.rfind("@")
    if at == -1:
        return scheme, "", None, rest
    user, colon, password = rest[:at].partition(":")
    return scheme, user, password if colon else None, rest[at + 1:]


def redact_url(url: str) -> str:
    """The URL without its password (in the user part or a ``password=`` parameter), for messages and logs."""
    parts = _split(url)
    if parts is None:
        return url
    scheme, user, password, rest = parts
    userinfo = f"{user}:{HIDDEN}@" if password is not None else (f"{user}@" if user else "")
    return f"{scheme}://{userinfo}" + QUERY_PASSWORD.sub(lambda match: match.group(1) + HIDDEN, rest)


def redact(value: Any) -> Any:
    """``value`` with the password hidden if it is a URL string; anything else unchanged."""
    return redact_url(value) if isinstance(value, str) and "://" in value else value


def secrets(url: str) -> list[str]:
    """Every text of the URL's that must not be shown: its passwords, decoded or not, and their pieces."""
    parts = _split(url)
    if parts is None:
        return []
    found = [parts[2]] if parts[2] else []
    found += [match.group(2) for match in QUERY_PASSWORD.finditer(parts[3]) if match.group(2)]
    found += [unquote(text) for text in found]
    found += [piece for text in list(found) for piece in re.split(r"[@/?#:\s%]", text) if len(piece) >= MIN_PIECE]
    return sorted(set(found), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with every secret of ``url`` hidden."""
    for secret in secrets(url):
        text = text.replace(secret, HIDDEN)
    return text


def _hosts(url: str) -> list[str]:
    parts = _split(url)
    hosts = re.split(r"[/?]", parts[3], maxsplit=1)[0] if parts else ""
    return hosts.split(",")  # libpq's host1:5432,host2:5433 for failover


def _port(host: str) -> str:
    tail = host.rpartition("]")[2]  # past an IPv6 literal's brackets
    return tail.rpartition(":")[2] if ":" in tail else ""


def user_of(url: str) -> str:
    parts = _split(url)
    return unquote(parts[1]) if parts else ""


def server_of(url: str) -> str:
    """host:port for messages (libpq's defaults filled in); never any of the user part."""
    named = [host if _port(host) else f"{host or 'localhost'}:5432" for host in _hosts(url)]
    return ",".join(named)


def port_problem(url: str) -> str | None:
    """What is wrong with the URL's port(s), or None. Says nothing of the user part, which may hold a password."""
    for host in _hosts(url):
        port = _port(host)
        if port and not (port.isdigit() and 0 < int(port) <= 65535):
            return f"port {port!r} is not a number from 1 to 65535"
    return None


SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_url(target: Path | str) -> bool:
    """Whether the store's target is a database server's URL, rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(SERVER_SCHEMES)


def db_path(settings: Settings) -> Path:
    """The SQLite file the settings point at (for a server URL, the file it would be without one)."""
    url = settings.store.url
    if url and not url.startswith(SERVER_SCHEMES):
        return inputs.expanded(Path(url.removeprefix("sqlite://")))
    return inputs.expanded(settings.store.path or default_db_path())


def store_target(settings: Settings) -> Path | str:
    """What the store opens: a ``postgresql://`` URL, or a SQLite file's path."""
    url = settings.store.url
    return url if url and url.startswith(SERVER_SCHEMES) else db_path(settings)


def describe_database(settings: Settings) -> str:
    """One line saying which database the store uses and why (``persona status``, ``hermes install``)."""
    target = store_target(settings)
    if isinstance(target, str):
        return f"database: {redact_url(target)} (store.url)"
    if not settings.is_default("store.path"):
        return f"database: {target} (store.path)"
    choice = default_database()
    if inputs.expanded(choice.path) == target:
        return choice.describe()
    return f"database: {target} (Mnemosyne's database)"  # the home changed since the settings were read
