"""Hermes Agent: served through its plugin (persona tools and injection), not through a file of its own here."""

from __future__ import annotations

from .model import History, HistoryFormat, Host, Limit, OwnMemory, PromptSection

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
# A session log is {"session_id", "model", "platform", "session_start", "last_updated", "system_prompt", "tools",
# "messages": [...]}, a session's lines its messages; a message is OpenAI's chat shape: {"role", "content",
# "reasoning", "tool_calls": [{"id", "type", "function": {"name", "arguments"}}], "tool_call_id", "timestamp"}.
HISTORY_FORMAT = HistoryFormat(
    text=frozenset({"content", "text", "reasoning", "arguments", "system_prompt", "messages", "summary"}),
    structure=frozenset({"role", "id", "type", "name", "tool_call_id", "session_id", "model", "base_url",
                         "platform", "session_start", "last_updated", "timestamp", "tools", "message_count",
                         "finish_reason", "source"}),
    messages=frozenset({"content", "text"}))
HISTORY = History(".hermes", files=("sessions/*.json", "sessions/*.jsonl", "profiles/*/sessions/*.json",
                                    "profiles/*/sessions/*.jsonl"), format=HISTORY_FORMAT,
                  stores=("state.db", "state.db-wal", "profiles/*/state.db", "profiles/*/state.db-wal"),
                  store_reason="Hermes' own SQLite store, with full-text indexes: persona-tier never rewrites it; "
                               "`hermes sessions delete ID` removes a session", folder_env="HERMES_HOME")

# The memory tool's facts about the user: memories/USER.md, entries between `\n§\n` lines (MEMORY.md holds the
# agent's own notes, offered and never learned: docs/importing.md).
MEMORY = OwnMemory(".hermes", ("memories/USER.md",), "hermes", folder_env="HERMES_HOME")

HOST = Host(name=NAME, display=DISPLAY, section=SECTION, history=HISTORY, memory=(MEMORY,))
