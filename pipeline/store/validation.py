"""Checks on the arguments of store operations; each failure is an InputError naming the value."""

from __future__ import annotations

import unicodedata

from ..errors import InputError
from ..scopes import HOSTS, MAX_PROJECT_CHARS, kind_of, value_of
from ..tiers import TIERS

INVISIBLE = {"Cc", "Cf", "Zl", "Zp"}  # control, format (zero-width, bidi), line and paragraph separators
MAX_TOPIC_CHARS = 200  # a topic is a section heading, not a fact
MAX_PROFILE_CHARS = 1000  # a profile (session_id) names a user, not a document


def check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise InputError(f"invalid tier {tier!r}: expected one of {', '.join(TIERS)}")
    return tier


def check_confidence(confidence: float) -> float:
    if not 0.0 <= confidence <= 1.0:
        raise InputError(f"invalid confidence {confidence!r}: expected a number from 0 to 1")
    return confidence


def check_text(what: str, text: str, max_chars: int | None = None, *, setting: str | None = None) -> str:
    """``text`` stripped, or InputError: empty, a NUL byte, not valid UTF-8, or longer than ``max_chars``."""
    cleaned = text.strip()
    if not cleaned:
        raise InputError(f"{what} is empty")
    if "\x00" in cleaned:
        raise InputError(f"{what} contains a NUL byte")
    try:
        cleaned.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"{what} is not valid UTF-8 text") from None
    if max_chars is not None and len(cleaned) > max_chars:
        named = f" ({setting})" if setting else ""
        raise InputError(f"{what} is {len(cleaned)} characters long; the limit is {max_chars}{named}")
    return cleaned


def check_scope(scope: str | None) -> str | None:
    """A fact's scope as stored (None for global), or InputError naming what is wrong with it."""
    if scope is None or scope == "global":
        return None
    if not scope.startswith(("project:", "host:")):
        raise InputError(f"invalid scope {scope!r}: expected global, project:ID or host:NAME")
    value = check_text(f"the {kind_of(scope)} of scope {scope!r}", value_of(scope), MAX_PROJECT_CHARS)
    hidden = [char for char in value if unicodedata.category(char) in INVISIBLE]
    if hidden:  # a look-alike of another project's identity would match no reader, silently
        raise InputError(f"the {kind_of(scope)} of scope {scope!r} holds an invisible or control character "
                         f"(U+{ord(hidden[0]):04X})")
    if kind_of(scope) == "host" and value not in HOSTS:
        raise InputError(f"unknown host {value!r}: expected one of {', '.join(HOSTS)}")
    return f"{kind_of(scope)}:{value}"


def scope_in_file(value: object) -> str | None:
    """A facts file's ``scope:`` as stored (None for global), or InputError.

    A file says ``global``, ``{project: PATH-or-URL}`` or ``{host: NAME}`` (the stored spelling,
    ``project:ID`` or ``host:NAME``, is read too). A project given as a path (absolute, ``~`` or ``.``)
    is that directory's project, as ``persona add --project DIR`` finds it; a remote URL is normalised;
    anything else is an identity as ``persona project list`` shows it (``github.com/x/y``).
    """
    if value is None or value == "global":
        return None
    if isinstance(value, str):  # the stored spelling; a project in it is normalised as a remote is
        stored = check_scope(value)
        if stored is not None and kind_of(stored) == "project":
            return check_scope(f"project:{project_identity(value_of(stored))}")
        return stored
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in ("project", "host"):
        raise InputError(f"invalid scope {value!r}: expected global, {{project: PATH-or-URL}} or {{host: NAME}}")
    kind, given = next(iter(value.items()))
    if not isinstance(given, str):
        raise InputError(f"invalid {kind} {given!r} in scope: expected text")
    given = check_text(f"the {kind} of the scope", given, MAX_PROJECT_CHARS)
    return check_scope(f"project:{project_identity(given)}" if kind == "project" else f"host:{given}")


def project_identity(given: str) -> str:
    """The identity of the project a facts file names: a directory's project, a remote, or an identity."""
    from ..fs.projects import identity_of

    return identity_of(given, relative=given.startswith("."))
