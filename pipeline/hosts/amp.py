"""Amp: ~/.config/amp/AGENTS.md for the user; a project's AGENTS.md, or its CLAUDE.md where there is none."""

from __future__ import annotations

from .model import Host, MemoryFiles, Preset

NAME = "amp"
DISPLAY = "Amp"

HOST = Host(
    name=NAME, display=DISPLAY,
    offered_by_init=True,  # `persona init` adds its user-level preset where the host's folder exists
    # Amp (ampcode.com/manual, "AGENTS.md"; not verified here): no limit found.
    presets={NAME: Preset(DISPLAY, "AGENTS.md", ".config/amp/AGENTS.md", 2000)},
    # AGENTS.md in the working directory and its parents, AGENT.md or CLAUDE.md where a directory has none, and the
    # user's ~/.config/amp/AGENTS.md (one source says ~/.amp/AGENTS.md).
    load=MemoryFiles(names=("AGENTS.md",), user_files=(".config/amp/AGENTS.md",), fallback=("AGENT.md", "CLAUDE.md")),
)
