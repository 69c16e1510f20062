"""Gemini CLI: GEMINI.md in the project, ~/.gemini/GEMINI.md for the user."""

from __future__ import annotations

from .model import History, HistoryFormat, Host, MemoryFiles, OwnMemory, Preset

NAME = "gemini"
DISPLAY = "Gemini CLI"

# Per project (a folder under ~/.gemini/tmp): each session's chat as JSON Lines under chats/ (older releases: one
# JSON file), `/chat save TAG` checkpoints (checkpoint-TAG.json), the restore checkpoints (checkpoints/*.json)
# and the prompts typed (logs.json). Read from Gemini CLI 0.61.0's bundle and seen in the real CLI
# (tests/hosts/test_histories.py); GEMINI_CLI_HOME stands for the home.
# A chat line is a session's metadata ({"sessionId", "projectHash", "startTime", "lastUpdated"}) or a message:
# {"id", "timestamp", "type": "user" | "gemini" | "info" | ..., "content", "displayContent", "thoughts":
# [{"subject", "description"}], "toolCalls": [{"id", "name", "args", "result", "resultDisplay", "status"}], "model",
# "tokens"}; a checkpoint is the model's history, [{"role", "parts": [{"text"}, {"functionCall": {"name", "args"}},
# {"functionResponse": {"name", "response"}}]}]; logs.json the prompts, [{"sessionId", "messageId", "message"}].
HISTORY_FORMAT = HistoryFormat(
    text=frozenset({"content", "displayContent", "text", "thoughts", "args", "result", "response", "resultDisplay",
                    "output", "message", "messages", "description", "subject", "parts", "history",
                    "clientHistory"}),
    structure=frozenset({"id", "type", "role", "name", "displayName", "timestamp", "sessionId", "projectHash",
                         "startTime", "lastUpdated", "model", "status", "messageId", "callId", "kind", "tokens",
                         "mimeType", "fileUri", "data", "thoughtSignature", "renderOutputAsMarkdown", "filePath",
                         "path", "directory", "commitHash", "toolCall"}),
    messages=frozenset({"content", "displayContent", "text", "message"}))
HISTORY = History(".gemini", files=("tmp/*/chats/*.jsonl", "tmp/*/chats/*.json", "tmp/*/checkpoint-*.json",
                                    "tmp/*/checkpoints/*.json", "tmp/*/logs.json"), format=HISTORY_FORMAT,
                  home_env="GEMINI_CLI_HOME")

HOST = Host(
    name=NAME, display=DISPLAY,
    # Gemini CLI documents no limit for GEMINI.md.
    presets={NAME: Preset(DISPLAY, "GEMINI.md", ".gemini/GEMINI.md", 2000)},
    # GEMINI.md from the working directory up and ~/.gemini/GEMINI.md, with `@file` imports
    # (geminicli.com/docs/cli/gemini-md); it sends our markers and the files whole (tests/hosts/test_gemini.py).
    load=MemoryFiles(names=("GEMINI.md",), user_files=(".gemini/GEMINI.md",), import_depth=5),
    offered_by_init=True,
    history=HISTORY,
    # Gemini CLI 0.61's model keeps the user's global personal memory in ~/.gemini/GEMINI.md with its own edit
    # tools (older releases appended `- fact` under "## Gemini Added Memories"): its list items outside our region,
    # new since the last learn; and a private project memory, tmp/<name>/memory/MEMORY.md, one fact a line, for the
    # project whose root projects.json names by <name>. GEMINI_CLI_HOME stands for the home.
    memory=(OwnMemory(".gemini", ("GEMINI.md",), "instructions", home_env="GEMINI_CLI_HOME", baseline=True),
            OwnMemory(".gemini", ("tmp/*/memory/MEMORY.md",), "instructions", project="index",
                      home_env="GEMINI_CLI_HOME", index="projects.json")),
    # `@path` at a line's start or after a space or tab imports the file (a path starting with `.`, `/` or a letter;
    # geminicli.com/docs/core/memport): Gemini CLI 0.61.0's findImports, read in its bundle and seen in the real
    # CLI; a missing file becomes an "Import failed" comment naming its absolute path. `\@path` imports nothing.
    interprets=("at-import", "heading"),
)
