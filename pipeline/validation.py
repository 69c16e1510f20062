"""Checks on the arguments of store operations; each failure is an InputError naming the value."""

from __future__ import annotations

from .errors import InputError
from .settings import TIERS


def check_tier(tier: str) -> str:
    if tier not in TIERS:
        raise InputError(f"invalid tier {tier!r}: expected one of {', '.join(TIERS)}")
    return tier


def check_confidence(confidence: float) -> float:
    if not 0.0 <= confidence <= 1.0:
        raise InputError(f"invalid confidence {confidence!r}: expected a number from 0 to 1")
    return confidence


def check_text(what: str, text: str, max_chars: int | None = None) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise InputError(f"{what} is empty")
    if "\x00" in cleaned:
        raise InputError(f"{what} contains a NUL byte")
    if max_chars is not None and len(cleaned) > max_chars:
        raise InputError(f"{what} is {len(cleaned)} characters long; the limit is {max_chars} (store.max_fact_chars)")
    return cleaned
