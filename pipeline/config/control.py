"""The settings of what agents may write and what is learned from the hosts' own memory (issue 53): each field
declared once, with its default and a description. :class:`pipeline.config.schema.Settings` gathers them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..hosts.registry import learners, spelled
from ..scopes import HostName
from .sections import Section

Approval = Literal["allow", "ask"]


class WritesSettings(Section):
    agents: Approval = Field(
        "allow",
        description="Writes through the agent tools (MCP, the Hermes plugin): allow makes them at once; ask holds "
        "each add, promote, replace and demote as a proposal you accept or dismiss in `persona review` (or the "
        "page's Proposals), and the tool answers that the fact awaits your approval. A forget is never held.",
    )


class LearnSettings(Section):
    hosts: list[HostName] = Field(
        default_factory=lambda: list(learners()),
        description=f"The hosts `persona learn` (and `persona tick`) learn from: what each one's model saved in its "
        f"own memory becomes a fact written by that host, for every other agent. Hosts with a memory: "
        f"{spelled(learners(), 'and')}; [] learns from none.",
    )
    on_tick: bool = Field(
        True,
        description="Learn wherever what is due is rendered: each `persona tick`, a hook's or the Hermes plugin's "
        "session start, a compaction and the MCP server's reads, so what one agent's memory saved reaches every "
        "other agent's next start with no cron. A learned fact is left out of its own host's files (that host "
        "loads its own memory). false: only `persona learn` learns.",
    )
    approve: Approval = Field(
        "allow",
        description="allow: a learned fact is written at once; ask: each is held for your approval in `persona "
        "review` (and the page's Proposals), as writes.agents: ask holds an agent's write.",
    )
