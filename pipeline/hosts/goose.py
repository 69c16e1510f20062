"""Goose: ~/.config/goose/.goosehints for the user, and .goosehints up the tree; read as a Jinja template."""

from __future__ import annotations

from .model import Host, MemoryFiles, Preset

NAME = "goose"
DISPLAY = "Goose"

HOST = Host(
    name=NAME, display=DISPLAY,
    offered_by_init=True,  # `persona init` adds its user-level preset where the host's folder exists
    # Goose (block.github.io/goose/docs/guides/using-goosehints; not verified here): no limit documented.
    presets={NAME: Preset(DISPLAY, ".goosehints", ".config/goose/.goosehints", 2000)},
    # the global hints, then .goosehints in the working directory and its parents (CONTEXT_FILE_NAMES can name
    # other files, AGENTS.md among them)
    load=MemoryFiles(names=(".goosehints",), user_files=(".config/goose/.goosehints",)),
    # Goose renders each hints file as a template (minijinja): a fact's `{{`, `{%` and `{#` are written as Jinja
    # writes a literal one, so Goose shows them as written (tests/hosts/test_goose_hints.py renders our file so)
    interprets=("jinja", "heading"),
)
