"""What a host's system prompt gains: the header, then the persona block."""

from __future__ import annotations


def appendix(header: str, block: str) -> str:
    """Exactly what is appended to a system prompt for ``block`` ("" for an empty block)."""
    return f"\n\n{header}\n{block}" if block else ""


def shown(appended: str) -> str:
    """An appendix as `persona inject`, a hook and an MCP resource show it: from the header on, without the blank
    lines that part it from the prompt it follows (there is none there; on a terminal they read as a fault)."""
    return appended.lstrip("\n")
