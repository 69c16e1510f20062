"""Codex: AGENTS.md per directory from the git root down, and the global one in $CODEX_HOME (~/.codex)."""

from __future__ import annotations

from .model import History, Host, Limit, PerDirectory, Preset

NAME = "codex"
DISPLAY = "Codex"
# per directory, the first non-empty one (Codex's AGENTS.md guide)
NAMES = ("AGENTS.override.md", "AGENTS.md")
CHAIN_BYTES = 32 * 1024  # Codex's default project_doc_max_bytes

# Session rollouts, one JSON Lines file per session by date (archived ones apart), which `codex exec resume`
# replays; the prompts typed in history.jsonl. Codex 0.171 also copies each thread into SQLite
# (thread_history_1.sqlite, state_5.sqlite and their write-ahead logs; seen in tests/hosts/test_histories.py):
# those are named, never rewritten.
HISTORY = History(".codex", files=("sessions/**/rollout-*.jsonl", "archived_sessions/**/rollout-*.jsonl",
                                   "history.jsonl"),
                  stores=("*.sqlite", "*.sqlite-wal"),
                  store_reason="a SQLite copy of Codex's own threads: persona-tier never rewrites it (Codex resumes "
                               "from the rollout, which it did rewrite); `codex delete ID` deletes a session whole",
                  folder_env="CODEX_HOME")

HOST = Host(
    name=NAME, display=DISPLAY,
    presets={
        # Codex stops reading its AGENTS.md chain at project_doc_max_bytes (32 KiB), silently
        # (developers.openai.com/codex/guides/agents-md, "project_doc_max_bytes"): 2000 tokens (about 8 KiB)
        # leaves three quarters of that for the user's own files. What is past the limit is dropped, so the region
        # goes at the start of the file.
        NAME: Preset(DISPLAY, "AGENTS.md", ".codex/AGENTS.md", 2000,
                     limits=(Limit(CHAIN_BYTES, "bytes", "chain",
                                   source="developers.openai.com/codex/guides/agents-md, project_doc_max_bytes"),),
                     region_at="start"),
    },
    # project_doc_max_bytes counts the project's files only (measured in the real Codex: tests/hosts/test_codex.py)
    load=PerDirectory(names=NAMES, home_dir=".codex", home_env="CODEX_HOME"),
    offered_by_init=True,
    # A user-level file Codex loads instead of its usual one while it exists.
    user_override=NAMES[0],
    history=HISTORY,
)
