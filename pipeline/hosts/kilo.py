"""Kilo Code: a rules file of ours in .kilocode/rules/, and one in the user's ~/.kilocode/rules/."""

from __future__ import annotations

from .model import Host, MemoryFiles, Preset

NAME = "kilo"
DISPLAY = "Kilo Code"
RULES = ".kilocode/rules"

HOST = Host(
    name=NAME, display=DISPLAY,
    offered_by_init=True,  # `persona init` adds its user-level preset where the host's folder exists
    # Kilo Code (kilo.ai/docs/customize/custom-rules; not verified here): every .md file in the project's and the user's
    # rules folders, merged (the project's win); no limit stated.
    presets={NAME: Preset(DISPLAY, f"{RULES}/persona.md", f"{RULES}/persona.md", 2000, output="file")},
    load=MemoryFiles(names=(), user_files=(), rules=RULES, user_rules=RULES),
)
