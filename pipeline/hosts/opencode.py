"""OpenCode: ~/.config/opencode/AGENTS.md for the user, or ~/.claude/CLAUDE.md in its place; a project's AGENTS.md
files up the tree, or its CLAUDE.md files where there is none."""

from __future__ import annotations

from .model import FirstFound, History, HistoryFormat, Host, Preset

NAME = "opencode"
DISPLAY = "OpenCode"
USER_FILE = ".config/opencode/AGENTS.md"
CLAUDE_USER_FILE = ".claude/CLAUDE.md"  # Claude Code's, which OpenCode reads while its own is absent

# OpenCode 1.18.33 keeps every session in its own SQLite store, ~/.local/share/opencode/opencode.db (tables session,
# message, part, session_message, each row's text as JSON in `data`; seen after a run against the fake model): a
# resumed session (`opencode run --continue`) sends it again. persona-tier never rewrites that database; `persona
# forget` names it.
HISTORY = History(".local/share/opencode", files=(), format=HistoryFormat(frozenset(), frozenset(), frozenset()),
                  stores=("opencode.db", "opencode.db-wal"),
                  store_reason="OpenCode's own SQLite store: persona-tier never rewrites it; delete the session in "
                               "OpenCode to take its text out")

HOST = Host(
    name=NAME, display=DISPLAY,
    offered_by_init=True,  # `persona init` adds its user-level preset where the host's folder exists
    presets={
        # OpenCode documents no limit on its instruction files. Its own user file hides ~/.claude/CLAUDE.md, so the
        # user-level target waits while that file is what OpenCode reads (a Claude Code target of ours reaches
        # OpenCode there), and takes over once the user makes ~/.config/opencode/AGENTS.md.
        NAME: Preset(DISPLAY, "AGENTS.md", USER_FILE, 2000, user_fallback=CLAUDE_USER_FILE),
    },
    # Read in OpenCode 1.18.33's own code (its Instruction service) and seen against a recording model
    # (tests/hosts/test_opencode.py): the first of its config folder's AGENTS.md and ~/.claude/CLAUDE.md that
    # exists; then of AGENTS.md, CLAUDE.md and CONTEXT.md the first name found from the working directory up to
    # the git root, every file of it, nearest first; each sent whole after "Instructions from: PATH", HTML
    # comments, `@path` and braces as written. OPENCODE_DISABLE_CLAUDE_CODE_PROMPT=1 skips both CLAUDE.md.
    load=FirstFound(user_files=(USER_FILE, CLAUDE_USER_FILE), names=("AGENTS.md", "CLAUDE.md", "CONTEXT.md")),
    history=HISTORY,
)
