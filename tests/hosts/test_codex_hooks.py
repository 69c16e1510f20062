"""Codex's SessionStart hook, as the real Codex 0.171 runs it: why `persona hooks install codex` is not offered.

Codex 0.171 has hooks on by default (`codex features list`: `hooks stable true`; `codex_hooks` was the flag's
earlier name) and reads them from ~/.codex/hooks.json, in Claude Code's shape. A hook's JSON output
(`hookSpecificOutput.additionalContext`, what `persona inject --format claude-code` prints) reaches the model.
But a hook the user has not reviewed in Codex's own `/hooks` is untrusted and skipped without a word: one
persona-tier wrote would stay silent until then, and approving it for the user would defeat that review. Only
`--dangerously-bypass-hook-trust` runs it unreviewed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .facts import main_request
from .fake_model import FakeModel
from .hosts import CODEX, PERSONA, Host, persona, run_codex

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("host", [CODEX], ids=str, indirect=True)]
FACT = "Answers in haiku when asked about the weather."


def session_start_hook(home: Path) -> None:
    command = f"{PERSONA} inject --format claude-code --host codex"
    hook = {"matcher": "startup|resume", "hooks": [{"type": "command", "command": command}]}
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    (home / ".codex" / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [hook]}}), "utf-8")


def test_an_unreviewed_session_start_hook_is_skipped_silently(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    persona(home, "add", FACT, "--topic", "style")
    session_start_hook(home)
    assert FACT not in main_request(run_codex(model, project, home, "hello")).text


def test_a_trusted_hook_hands_codex_the_persona_in_claude_codes_json(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    persona(home, "add", FACT, "--topic", "style")
    session_start_hook(home)
    request = main_request(run_codex(model, project, home, "hello", "--dangerously-bypass-hook-trust"))
    assert request.text.count(FACT) == 1
