"""The three tiers, in rank order: permanent never decays, long_term decays, working expires.

Everything that names a tier (settings, stages, tools, SQL) builds from this one list.
"""

from __future__ import annotations

from typing import Literal

Tier = Literal["permanent", "long_term", "working"]
TIERS: tuple[Tier, ...] = ("permanent", "long_term", "working")
TIER_RANK: dict[str, int] = {tier: rank for rank, tier in enumerate(TIERS)}


def sql_list(separator: str = ", ") -> str:
    """The tiers as SQL string literals: ``'permanent', 'long_term', 'working'``."""
    return separator.join(f"'{tier}'" for tier in TIERS)


def sql_rank(column: str = "tier") -> str:
    """A SQL expression for a tier's rank (permanent first), for ORDER BY."""
    whens = " ".join(f"WHEN '{tier}' THEN {rank}" for rank, tier in enumerate(TIERS[:-1]))
    return f"CASE {column} {whens} ELSE {len(TIERS) - 1} END"
