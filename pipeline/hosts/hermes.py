"""Hermes Agent: served through its plugin (persona tools and injection), not through a file of its own here."""

from __future__ import annotations

from .model import History, Host, Limit, PromptSection

NAME = "hermes"
DISPLAY = "Hermes Agent"

# Hermes 0.22 and later (hermes_cli/plugins.py, register_system_prompt_section): a plugin's section is skipped
# when its text (stripped, the host's heading not counted) is over max_chars, at most 4,000; every plugin's
# sections share 8,000 characters, headings and frames included.
SECTION = PromptSection(
    id="persona-tier", frame="## Plugin Context: {id}\n<!-- hermes-plugin-section-chars:{chars} -->\n\n", total=8_000,
    limit=Limit(4_000, "chars", source="Hermes 0.22 hermes_cli/plugins.py, register_system_prompt_section"))

# Hermes keeps sessions in its SQLite store, state.db (full-text indexes, a write-ahead log), per profile; a
# session's messages go to sessions/ID.jsonl when state.db was replaced under it, and older releases logged
# sessions as JSON there (hermes-agent's hermes_state.py). HERMES_HOME stands for ~/.hermes.
HISTORY = History(".hermes", files=("sessions/*.json", "sessions/*.jsonl", "profiles/*/sessions/*.json",
                                    "profiles/*/sessions/*.jsonl"),
                  stores=("state.db", "state.db-wal", "profiles/*/state.db", "profiles/*/state.db-wal"),
                  store_reason="Hermes' own SQLite store, with full-text indexes: persona-tier never rewrites it; "
                               "`hermes sessions delete ID` removes a session", folder_env="HERMES_HOME")

HOST = Host(name=NAME, display=DISPLAY, section=SECTION, history=HISTORY)
