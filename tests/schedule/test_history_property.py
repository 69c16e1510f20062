"""A property of `forget` in the hosts' histories: transcripts in each host's shape (Claude Code, Codex, Gemini CLI,
Hermes' session logs), with the forgotten text in random text fields, spelled at random (case, NFD, full width, a
zero-width space, line breaks, JSON escapes for any letter, an escaped solidus) and nested in JSON inside a string.
After the forget every line still parses, every structural field and every other text is unchanged, and no form of
the text remains in any text field at any level.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import PersonaStore, load_settings
from pipeline.fs.text_find import MARKER, fold
from pipeline.hosts.registry import HOSTS
from pipeline.schedule.forget import forget
from pipeline.text import normal_form

FACTS = ["Drinks Quetzal tea, never coffee", "Prefers café crème au lait in the morning",
         "Reviews pull requests before lunch on Fridays", "Schreibt Commit-Nachrichten auf Englisch"]
WORDS = ["the", "build", "ran", "green", "after", "we", "moved", "the", "cache", "and", "checked", "each", "branch",
         "again", "later"]
IDS = st.text("0123456789abcdef-", min_size=4, max_size=12)


def spelled(text: str, rng: random.Random) -> str:
    """The text as a person or a host might have written it: other case, NFD, full width, a zero-width space."""
    out = rng.choice([text, text.upper(), text.lower(), unicodedata.normalize("NFD", text)])
    if rng.random() < 0.3:
        out = "".join(chr(ord(c) + 0xFEE0) if c.isalpha() and c.isascii() and rng.random() < 0.3 else c for c in out)
    if rng.random() < 0.3:
        at = out.find(" ") + 2
        out = out[:at] + "\u200b" + out[at:]
    return out.replace(" ", rng.choice([" ", "  ", "\n", " \t "]), 1)


def said(rng: random.Random, fact: str, holds: bool, nest: int) -> str:
    """A text field's value: filler words, the fact spelled at random where ``holds``, JSON inside it ``nest`` times."""
    words = [rng.choice(WORDS) for _ in range(rng.randrange(0, 6))]
    if holds:
        words.insert(rng.randrange(len(words) + 1), spelled(fact, rng) + rng.choice(["", ".", "!"]))
    value = " ".join(words)
    for _ in range(nest):
        value = json.dumps({"note": value, "id": rng.randrange(99)}, ensure_ascii=rng.random() < 0.5,
                           indent=rng.choice([None, 2]))
    return value


def records(host: str, text: Any, ids: str) -> list[Any]:
    """Records in the host's own shape, each text field a call of ``text()``."""
    if host == "claude-code":
        return [{"type": "user", "uuid": ids, "cwd": f"/home/me/{ids}", "gitBranch": "main", "sessionId": ids,
                 "message": {"role": "user", "content": text()}},
                {"type": "assistant", "uuid": ids, "message": {"role": "assistant", "model": "claude", "content": [
                    {"type": "text", "text": text()},
                    {"type": "tool_use", "id": ids, "name": "Bash", "input": {"command": text(), "file_path": ids}}]}},
                {"type": "user", "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": ids, "content": text()}]},
                 "toolUseResult": {"stdout": text(), "filePath": ids}},
                {"type": "summary", "summary": text(), "leafUuid": ids}]
    if host == "codex":
        return [{"timestamp": ids, "type": "response_item", "payload": {
                    "type": "message", "role": "user", "content": [{"type": "input_text", "text": text()}]}},
                {"type": "response_item", "payload": {"type": "function_call", "name": "shell", "call_id": ids,
                                                      "arguments": json.dumps({"command": [text()]})}},
                {"type": "response_item", "payload": {"type": "function_call_output", "call_id": ids,
                                                      "output": text()}},
                {"type": "event_msg", "payload": {"type": "user_message", "message": text(), "kind": "plain"}}]
    if host == "gemini":
        return [{"id": ids, "timestamp": ids, "type": "user", "content": text()},
                {"id": ids, "type": "gemini", "model": "gemini", "content": text(), "toolCalls": [
                    {"id": ids, "name": "run", "args": {"command": text()}, "status": "success",
                     "result": [{"functionResponse": {"id": ids, "name": "run", "response": {"output": text()}}}]}]}]
    return [{"role": "user", "content": text(), "timestamp": ids},
            {"role": "assistant", "content": text(), "reasoning": text(), "tool_calls": [
                {"id": ids, "type": "function", "function": {"name": "terminal", "arguments": json.dumps(
                    {"command": text()})}}]}]


def escaped(line: str, rng: random.Random) -> str:
    """``line`` with letters in its strings spelled as JSON escapes and solidi escaped, at random."""
    def token(match: re.Match[str]) -> str:
        out, body = [], match.group(0)[1:-1]
        parts = re.findall(r"\\u[0-9a-fA-F]{4}|\\.|.", body, re.DOTALL)
        for part in parts:
            if len(part) == 1 and part.isascii() and part.isalpha() and rng.random() < 0.2:
                out.append(f"\\u{ord(part):04{'x' if rng.random() < 0.5 else 'X'}}")
            else:
                out.append("\\/" if part == "/" and rng.random() < 0.5 else part)
        return '"' + "".join(out) + '"'
    return re.sub(r'"(?:[^"\\]|\\.)*"', token, line)


PATHS = {"claude-code": ".claude/projects/-work-a/s.jsonl", "codex": ".codex/sessions/2026/01/02/rollout-1.jsonl",
         "gemini": ".gemini/tmp/p/chats/session-1.jsonl", "hermes": ".hermes/sessions/abc.jsonl"}


@pytest.fixture
def store_settings(tmp_path: Path) -> Any:
    return load_settings(overrides={"store.path": str(tmp_path / "m.db"),
                                    "injection.file": str(tmp_path / "persona-{profile}.md")})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(PATHS)), st.sampled_from(FACTS), st.integers(0, 2**32), IDS,
       st.lists(st.tuples(st.booleans(), st.integers(0, 2)), min_size=1, max_size=12))
def test_forget_leaves_every_line_whole_and_no_form_of_the_text(
        store_settings: Any, host: str, fact: str, seed: int, ids: str, fields: list[tuple[bool, int]]) -> None:
    rng, plan, held = random.Random(seed), iter(fields * 20), []

    def text() -> str:
        holds, nest = next(plan)
        held.append(holds)
        return said(rng, fact, holds, nest)
    path = Path.home() / PATHS[host]
    path.parent.mkdir(parents=True, exist_ok=True)
    before = [record for _ in range(2) for record in records(host, text, ids)]
    lines = [escaped(json.dumps(record, ensure_ascii=rng.random() < 0.5), rng) for record in before]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with PersonaStore.from_settings(store_settings, profile="alice") as store:
        fact_id = store.add(fact, topic="t", force=True).fact.id  # forgotten in an earlier example
        forget(store_settings, store, fact_id)
    after = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert len(after) == len(before)
    assert (MARKER in path.read_text("utf-8")) == any(held)
    needle = normal_form(fact)
    for old, new in zip(before, after, strict=True):
        _same_but_the_text(old, new, HOSTS[host].history.format, False, needle)  # type: ignore[union-attr]


def _same_but_the_text(old: Any, new: Any, roles: Any, text: bool, needle: str) -> None:
    """Structure equal; each text field equal but where the text stood (now the marker), at every level."""
    if isinstance(old, dict):
        assert list(old) == list(new)
        for key in old:
            mode = False if roles and key in roles.structure else True if roles and key in roles.text else text
            _same_but_the_text(old[key], new[key], roles, mode if roles else True, needle)
    elif isinstance(old, list):
        assert len(old) == len(new)
        for one, other in zip(old, new, strict=True):
            _same_but_the_text(one, other, roles, text, needle)
    elif isinstance(old, str) and text:
        _text_field(old, new, needle)
    else:
        assert old == new


def _text_field(old: str, new: str, needle: str) -> None:
    try:
        inner_old, inner_new = json.loads(old), json.loads(new)
    except ValueError:
        inner_old = None
    if isinstance(inner_old, (dict, list)):
        _same_but_the_text(inner_old, inner_new, None, True, needle)
        return
    normal = " ".join(fold(new).split())
    assert needle not in normal.replace(MARKER, " ")
    pattern = r"(?<!\w)" + re.escape(needle) + r"(?!\w)"
    assert re.sub(pattern, MARKER, " ".join(fold(old).split())) == normal
