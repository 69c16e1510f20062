"""Backend capabilities, declared once with their defaults (as Django's ``features.py``), never probed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Features:
    """What a backend can do, declared once here with its default; a backend overrides only what differs."""

    pooled: bool = False  # connections are borrowed per operation and given back, not held by the store
    announces: bool = False  # a block write is announced to listeners on other hosts (LISTEN/NOTIFY)
    round_trips: bool = False  # each statement waits for a server's answer: one statement for two saves one
    relaxes_late: bool = False  # a write transaction may stop waiting for the disk after its BEGIN (relax_commit)
