"""Hermes Agent: served through its plugin (persona tools and injection), not through a file of its own here."""

from __future__ import annotations

from .model import History, Host

NAME = "hermes"
DISPLAY = "Hermes Agent"

# Hermes keeps sessions in its SQLite store, state.db (full-text indexes, a write-ahead log), per profile; a
# session's messages go to sessions/ID.jsonl when state.db was replaced under it, and older releases logged
# sessions as JSON there (hermes-agent's hermes_state.py). HERMES_HOME stands for ~/.hermes.
HISTORY = History(".hermes", files=("sessions/*.json", "sessions/*.jsonl", "profiles/*/sessions/*.json",
                                    "profiles/*/sessions/*.jsonl"),
                  stores=("state.db", "state.db-wal", "profiles/*/state.db", "profiles/*/state.db-wal"),
                  store_reason="Hermes' own SQLite store, with full-text indexes: persona-tier never rewrites it; "
                               "`hermes sessions delete ID` removes a session", folder_env="HERMES_HOME")

HOST = Host(name=NAME, display=DISPLAY, history=HISTORY)
