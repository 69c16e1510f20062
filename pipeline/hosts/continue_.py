"""Continue: a rule of ours in .continue/rules/, for the project or the user."""

from __future__ import annotations

from .model import Host, Preset

NAME = "continue"
DISPLAY = "Continue"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Continue (docs.continue.dev, "Rules"): name is required; alwaysApply: true includes it in every request.
    presets={NAME: Preset(DISPLAY, ".continue/rules/persona.md", ".continue/rules/persona.md", 2000, output="file",
                          front_matter=(("name", "persona-tier"), ("alwaysApply", True),
                                        ("description", "The user's standing preferences, kept by persona-tier")))},
)
