"""Zed: ~/.config/zed/AGENTS.md for the user; in a project, the first of its rules files that exists."""

from __future__ import annotations

from .model import FirstFound, Host, Preset

NAME = "zed"
DISPLAY = "Zed"
# Zed reads only the first of these in a project's root (zed.dev/docs/ai/rules; not verified here): a `.rules`
# hides the project's AGENTS.md.
PROJECT_FILES = (".rules", ".cursorrules", ".windsurfrules", ".clinerules", ".github/copilot-instructions.md",
                 "AGENT.md", "AGENTS.md", "CLAUDE.md", "GEMINI.md")

HOST = Host(
    name=NAME, display=DISPLAY,
    offered_by_init=True,  # `persona init` adds its user-level preset where the host's folder exists
    presets={
        # No limit documented. In a project our region goes in the file Zed loads, so that it is loaded and the
        # user's file stays so; where there is none, in `.rules`, which no other host reads.
        NAME: Preset(DISPLAY, ".rules", ".config/zed/AGENTS.md", 2000, first_of=PROJECT_FILES),
    },
    load=FirstFound(user_files=(".config/zed/AGENTS.md",), names=PROJECT_FILES, up_tree=False),
)
