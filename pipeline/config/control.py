"""The settings of what agents may write and what is learned from the hosts' own memory (issue 53): each field
declared once, with its default and a description. :class:`pipeline.config.schema.Settings` gathers them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .sections import Section

Approval = Literal["allow", "ask"]


class WritesSettings(Section):
    agents: Approval = Field(
        "allow",
        description="Writes through the agent tools (MCP, the Hermes plugin): allow makes them at once; ask holds "
        "each add, promote, replace and demote as a proposal you accept or dismiss in `persona review` (or the "
        "page's Proposals), and the tool answers that the fact awaits your approval. A forget is never held.",
    )
