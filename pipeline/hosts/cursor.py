"""Cursor: a project rule (.cursor/rules/persona.mdc) that is ours alone; no user-level file."""

from __future__ import annotations

from .model import Host, Preset

NAME = "cursor"
DISPLAY = "Cursor"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Cursor advises rules under 500 lines; the .mdc file is ours alone, front matter included.
    presets={NAME: Preset(DISPLAY, ".cursor/rules/persona.mdc", None, 1500, template="persona.mdc.j2",
                          output="file")},
)
