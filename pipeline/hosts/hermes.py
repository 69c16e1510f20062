"""Hermes Agent: served through its plugin (persona tools and injection), not through a file of its own here."""

from __future__ import annotations

from .model import Host, Limit, PromptSection

NAME = "hermes"
DISPLAY = "Hermes Agent"

# Hermes 0.22 and later (hermes_cli/plugins.py, register_system_prompt_section): a plugin's section is skipped
# when its text (stripped, the host's heading not counted) is over max_chars, at most 4,000; every plugin's
# sections share 8,000 characters, headings and frames included.
SECTION = PromptSection(
    id="persona-tier", frame="## Plugin Context: {id}\n<!-- hermes-plugin-section-chars:{chars} -->\n\n", total=8_000,
    limit=Limit(4_000, "chars", source="Hermes 0.22 hermes_cli/plugins.py, register_system_prompt_section"))

HOST = Host(name=NAME, display=DISPLAY, section=SECTION)
