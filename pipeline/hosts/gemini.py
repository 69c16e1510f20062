"""Gemini CLI: GEMINI.md in the project, ~/.gemini/GEMINI.md for the user."""

from __future__ import annotations

from .model import Host, MemoryFiles, Preset

NAME = "gemini"
DISPLAY = "Gemini CLI"

HOST = Host(
    name=NAME, display=DISPLAY,
    # Gemini CLI documents no limit for GEMINI.md.
    presets={NAME: Preset(DISPLAY, "GEMINI.md", ".gemini/GEMINI.md", 2000)},
    # GEMINI.md from the working directory up and ~/.gemini/GEMINI.md, with `@file` imports
    # (geminicli.com/docs/cli/gemini-md); it sends our markers and the files whole (tests/hosts/test_gemini.py).
    load=MemoryFiles(names=("GEMINI.md",), user_files=(".gemini/GEMINI.md",), import_depth=5),
    offered_by_init=True,
)
