"""Kiro: a steering file of ours, for the project or the user."""

from __future__ import annotations

from .model import Host, Preset

NAME = "kiro"
DISPLAY = "Kiro"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Kiro (kiro.dev/docs/steering): inclusion: always loads the steering file in every interaction.
    presets={NAME: Preset(DISPLAY, ".kiro/steering/persona.md", ".kiro/steering/persona.md", 2000, output="file",
                          front_matter=(("inclusion", "always"),))},
)
