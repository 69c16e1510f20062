"""Checks on the arguments of store operations; each failure is an InputError naming the value."""

from __future__ import annotations

from ..errors import InputError
from ..tiers import TIERS

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
