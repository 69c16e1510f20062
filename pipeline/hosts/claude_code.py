"""Claude Code: CLAUDE.md (or its rules folder), the user's ~/.claude/CLAUDE.md, and the SessionStart hook."""

from __future__ import annotations

from .model import History, HistoryFormat, Hook, Host, Limit, MemoryFiles, OwnMemory, Preset

NAME = "claude-code"
DISPLAY = "Claude Code"
RULES = "claude-code-rules"  # `targets add claude-code --rules`

# Claude Code saves a hook's output over 10,000 characters to a file and shows the model a 2 KB preview
# (code.claude.com/docs/en/hooks, "Hook output"; anthropics/claude-code#94358): additionalContext stays under it.
HOOK_LIMIT = Limit(10_000, "chars", source="code.claude.com/docs/en/hooks, Hook output")
# The SessionStart entry in settings.json (the user's ~/.claude or the project's DIR/.claude).
HOOK = Hook(format=NAME, settings_dir=".claude", settings_name="settings.json", event="SessionStart",
            # startup and resume start a session, clear and compact start its context anew
            # (code.claude.com/docs/en/hooks)
            matcher="startup|resume|clear|compact", project_dir_env="CLAUDE_PROJECT_DIR", limits=(HOOK_LIMIT,))

# Every session's transcript, a JSON Lines file per session under the project's folder (subagents' beside it),
# replayed on --resume; and the prompts typed, for the up arrow (seen in the real Claude Code 2.1.332:
# tests/hosts/test_histories.py). CLAUDE_CONFIG_DIR stands for ~/.claude.
# A transcript line is a record: {"type": "user"|"assistant"|"summary"|"system"|..., "uuid", "parentUuid", "sessionId",
# "cwd", "gitBranch", "version", "timestamp", "message": {"role", "model", "content": "..." or [{"type": "text",
# "text"}, {"type": "thinking", "thinking", "signature"}, {"type": "tool_use", "id", "name", "input": {...}},
# {"type": "tool_result", "tool_use_id", "content"}]}, "toolUseResult": {...}}; a summary's "summary"; a
# file-history snapshot's paths (keys) and backups; history.jsonl's {"display", "pastedContents", "project"}. 2.1.332
# also writes the prompt queued ("queue-operation"'s "content") and last typed ("last-prompt"'s "lastPrompt"), each
# request's messages ("api-request-blob"), and attachments: the instruction files read, hooks' context, their
# "rendered" text (seen in tests/hosts/test_histories.py).
HISTORY_FORMAT = HistoryFormat(
    text=frozenset({"content", "text", "thinking", "input", "toolUseResult", "summary", "display", "pastedContents",
                    "todos", "prompt", "additionalContext", "stdout", "stderr", "lastPrompt", "rendered",
                    "systemPrompt", "addedLines"}),
    structure=frozenset({"type", "role", "id", "uuid", "parentUuid", "leafUuid", "logicalParentUuid", "sessionId",
                         "requestId", "messageId", "tool_use_id", "toolUseID", "sourceToolUseID", "agentId", "cwd",
                         "gitBranch", "version", "timestamp", "model", "name", "userType", "isSidechain", "isMeta",
                         "subtype", "level", "stop_reason", "stop_sequence", "usage", "signature", "media_type",
                         "data", "source", "filePath", "file_path", "notebook_path", "path", "project", "snapshot",
                         "backupFileName", "permissionMode", "slug", "is_error", "interrupted", "isImage",
                         "subagent_type", "status"}),
    messages=frozenset({"content", "text", "display", "summary"}))
HISTORY = History(".claude", files=("projects/**/*.jsonl", "history.jsonl"), format=HISTORY_FORMAT,
                  folder_env="CLAUDE_CONFIG_DIR")

HOST = Host(
    name=NAME, display=DISPLAY,
    presets={
        # Claude Code loads CLAUDE.md whole into every session and names no hard limit; it warns about large
        # memory files, so the persona stays a small share of it.
        # In a project with AGENTS.md and no CLAUDE.md, a CLAUDE.md of ours would stop Claude Code loading AGENTS.md
        # (it reads AGENTS.md only where no CLAUDE.md is): the rules folder loads beside it instead.
        # In a git checkout, CLAUDE.md is the team's: the rules file, excluded from git, keeps the persona personal.
        NAME: Preset(DISPLAY, "CLAUDE.md", ".claude/CLAUDE.md", 2000, beside_fallback=RULES, private=RULES),
        # Claude Code's own rules folder (code.claude.com/docs/en/memory, "rules"): a rule without `paths:` front
        # matter loads in every session, and the file is ours alone, so CLAUDE.md stays the user's.
        RULES: Preset(DISPLAY, ".claude/rules/persona.md", ".claude/rules/persona.md", 2000, output="file",
                      host_name=NAME),
    },
    rules_variant=RULES,
    # code.claude.com/docs/en/memory, and measured in the real Claude Code 2.1.332 (tests/hosts/test_claude_code.py):
    # CLAUDE.md and .claude/CLAUDE.md from the working directory up, AGENTS.md where a directory has no CLAUDE.md,
    # .claude/rules/*.md beside whichever is there, ~/.claude/CLAUDE.md and ~/.claude/rules; `@path` imports up to
    # five hops; HTML comments (our markers) taken out. No limit on these files is documented. A CLAUDE.md that is
    # empty or holds only HTML comments counts as absent (AGENTS.md loads in its place), and the rules folder is sent
    # before AGENTS.md (both seen in the real Claude Code 2.1.332).
    load=MemoryFiles(names=("CLAUDE.md", ".claude/CLAUDE.md"), user_files=(".claude/CLAUDE.md",),
                     fallback=("AGENTS.md",), rules=".claude/rules", user_rules=".claude/rules", import_depth=5,
                     drops_comments=True, blank_is_absent=True, fallback_after_rules=True, home_imports=True),
    hook=HOOK,
    offered_by_init=True,
    history=HISTORY,
    # Auto memory: ~/.claude/projects/<slug>/memory/MEMORY.md, the index the model keeps for the project whose
    # working directory the slug names, one fact a list item (code.claude.com/docs/en/memory).
    # And `#` in a prompt adds a line to a memory file the user picks: the user's ~/.claude/CLAUDE.md is theirs, so
    # its lines outside our region, new since the last learn, are learned (baseline: init imports what was there),
    # and, being the user's own words, never edited by a forget, which names the file instead. A project's
    # CLAUDE.md is the team's, shared by git, and never learned from.
    memory=(OwnMemory(".claude", ("projects/*/memory/MEMORY.md",), "instructions", project="slug",
                      folder_env="CLAUDE_CONFIG_DIR"),
            OwnMemory(".claude", ("CLAUDE.md",), "instructions", folder_env="CLAUDE_CONFIG_DIR", baseline=True,
                      users_own=True)),
    # `@path` after whitespace imports a file (code.claude.com/docs/en/memory, "CLAUDE.md imports"; not inside code);
    # a comment standing alone is dropped; a rules file's front matter is its settings (`paths:`). Seen in the real
    # Claude Code 2.1.332: `\@path` and a code span import nothing, `@~/path` nothing in `claude -p`.
    interprets=("at-import", "html-comment", "front-matter", "heading"),
)
