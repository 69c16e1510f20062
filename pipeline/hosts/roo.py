"""Roo Code: a rules file of ours in .roo/rules/, and one in the global ~/.roo/rules/."""

from __future__ import annotations

from .model import Host, Preset

NAME = "roo"
DISPLAY = "Roo Code"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Roo Code (docs.roocode.com, "Custom Instructions"): every file in the workspace's .roo/rules/ and the
    # global ~/.roo/rules/, global first, in every mode (.roo/rules-<mode>/ for one mode only); no limit stated.
    presets={NAME: Preset(DISPLAY, ".roo/rules/persona.md", ".roo/rules/persona.md", 2000, output="file")},
)
