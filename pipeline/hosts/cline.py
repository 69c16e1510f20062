"""Cline: a rules file of ours in .clinerules/, and one in the global rules folder."""

from __future__ import annotations

from .model import Host, Preset

NAME = "cline"
DISPLAY = "Cline"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Cline (docs.cline.bot, "Cline Rules"): every .md file in .clinerules/, and the global rules folder;
    # no limit stated.
    presets={NAME: Preset(DISPLAY, ".clinerules/persona.md", "Documents/Cline/Rules/persona.md", 2000,
                          output="file")},
)
