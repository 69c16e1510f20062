"""What a host's system prompt gains: the header, then the persona block."""

from __future__ import annotations


def appendix(header: str, block: str) -> str:
    """Exactly what is appended to a system prompt for ``block`` ("" for an empty block)."""
    return f"\n\n{header}\n{block}" if block else ""
