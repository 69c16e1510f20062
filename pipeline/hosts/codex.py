"""Codex: AGENTS.md per directory from the git root down, and the global one in $CODEX_HOME (~/.codex)."""

from __future__ import annotations

from .model import History, HistoryDatabase, HistoryFormat, HistoryTable, Host, Limit, LineIndex, PerDirectory, Preset

NAME = "codex"
DISPLAY = "Codex"
# per directory, the first non-empty one (Codex's AGENTS.md guide)
NAMES = ("AGENTS.override.md", "AGENTS.md")
CHAIN_BYTES = 32 * 1024  # Codex's default project_doc_max_bytes

# Session rollouts, one JSON Lines file per session by date (archived ones apart), which `codex exec resume`
# replays, and the prompts typed in history.jsonl. A rollout line is {"timestamp", "type": "session_meta" |
# "response_item" | "event_msg" | "turn_context" | "compacted", "payload": {...}}: a message's
# {"role", "content": [{"type": "input_text", "text"}]}, a call's "arguments" (JSON in a string) and its
# "output" (often JSON too), a reasoning "summary" of texts, events' "message", a session's instructions.
HISTORY_FORMAT = HistoryFormat(
    text=frozenset({"text", "message", "arguments", "output", "input", "instructions", "user_instructions",
                    "developer_instructions", "base_instructions", "aggregated_output", "formatted_output", "stdout",
                    "stderr", "replacement_history", "action", "content", "error_json", "raw_memory",
                    "rollout_summary", "objective", "last_agent_message", "title", "preview"}),
    structure=frozenset({"type", "role", "id", "session_id", "call_id", "turn_id", "clientId", "timestamp", "ts",
                         "ordinal", "cwd", "originator", "cli_version", "source", "thread_source", "model_provider",
                         "model", "name", "status", "approval_policy", "sandbox_policy", "effort", "summary",
                         "encrypted_content", "git", "rollout_path", "runtime_workspace_roots", "kind", "phase",
                         "account_scoped", "text_elements", "info", "rate_limits", "path", "workdir"}),
    messages=frozenset({"text", "message"}))
# Codex 0.171 copies each thread into SQLite too (seen in the real Codex: tests/hosts/test_histories.py): the
# thread's title, first message and preview (state_5), each item as JSON and each turn's byte offsets into its
# rollout (thread_history_1), memories drawn from it, goals and queued messages. They are scrubbed in place, and the
# offsets follow a rollout the scrub shortened.
DATABASES = (
    HistoryDatabase("state_5.sqlite", (HistoryTable("threads", text=("title", "first_user_message", "preview",
                                                                     "name")),
                                       HistoryTable("thread_attachments", json=("payload",)))),
    HistoryDatabase("thread_history_1.sqlite",
                    (HistoryTable("thread_items", json=("item_json",)),
                     HistoryTable("thread_realtime_items", json=("item_json",)),
                     HistoryTable("thread_turns", json=("error_json",))),
                    offsets=(LineIndex("thread_turns", ("rollout_byte_offset", "rollout_end_byte_offset"),
                                       "thread_id"),
                             LineIndex("thread_history_projection_state", ("next_rollout_byte_offset",),
                                       "thread_id"))),
    HistoryDatabase("memories_1.sqlite", (HistoryTable("stage1_outputs", text=("raw_memory", "rollout_summary")),)),
    HistoryDatabase("goals_1.sqlite", (HistoryTable("thread_goals", text=("objective",)),)),
    HistoryDatabase("queue_1.sqlite", (HistoryTable("queued_items", json=("payload_json",)),)),
    HistoryDatabase("logs_2.sqlite", (HistoryTable("logs", text=("feedback_log_body",)),)),
)
HISTORY = History(".codex", files=("sessions/**/rollout-*.jsonl", "archived_sessions/**/rollout-*.jsonl",
                                   "history.jsonl"), format=HISTORY_FORMAT, databases=DATABASES,
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
