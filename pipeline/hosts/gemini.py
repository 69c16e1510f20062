"""Gemini CLI: GEMINI.md in the project, ~/.gemini/GEMINI.md for the user."""

from __future__ import annotations

from .model import Host, Preset

NAME = "gemini"
DISPLAY = "Gemini CLI"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Gemini CLI documents no limit for GEMINI.md.
    presets={NAME: Preset(DISPLAY, "GEMINI.md", ".gemini/GEMINI.md", 2000)},
    offered_by_init=True,
)
