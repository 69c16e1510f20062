"""The general plugin against hermes-agent 0.19's own pieces, in process: its request builders for every
api_mode that reaches the middleware, its gateway session context for two users at once, and its
compressor's own summary text.

Run by `make test-hermes` (Hermes' venv); the unit-level twins are in tests/integrations/test_hermes_isolation.py.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pipeline.integrations.hermes_plugin import PersonaPlugin

SYSTEM, FACT = "You are Hermes.", "Answers tersely."
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}]
BEDROCK_SYSTEM_KEYS = {"text", "cachePoint", "guardContent"}  # Converse's SystemContentBlock union


@contextmanager
def hermes_home_override(home: Path) -> Iterator[None]:
    """Hermes' own context-local home (per-task profiles in one process), as get_hermes_home() reads it."""
    from hermes_constants import reset_hermes_home_override, set_hermes_home_override

    token = set_hermes_home_override(home)
    try:
        yield
    finally:
        reset_hermes_home_override(token)


def build(mode: str) -> dict[str, Any]:
    """The request Hermes 0.19 hands the llm_request middleware in ``mode``, from its own builders."""
    messages = copy.deepcopy(MESSAGES)
    if mode == "bedrock_converse":
        from agent.transports.bedrock import BedrockTransport

        return BedrockTransport().build_kwargs(model="anthropic.claude-v2", messages=messages, max_tokens=100)
    if mode == "anthropic_messages":
        from agent.anthropic_adapter import build_anthropic_kwargs

        return build_anthropic_kwargs("claude-sonnet-4", messages, None, 100, None)
    if mode == "codex_responses":
        from agent.transports.codex import ResponsesApiTransport

        return ResponsesApiTransport().build_kwargs(model="gpt-5", messages=messages)
    from agent.transports.chat_completions import ChatCompletionsTransport

    return ChatCompletionsTransport().build_kwargs(model="m", messages=messages, model_lower="m")


def system_text(mode: str, request: dict[str, Any]) -> str:
    """The system prompt in ``mode``'s shape, asserting the shape is one the provider accepts."""
    if mode == "bedrock_converse":
        assert all(isinstance(b, dict) and len(b) == 1 and set(b) <= BEDROCK_SYSTEM_KEYS for b in request["system"])
        return "".join(b.get("text", "") for b in request["system"])
    if mode == "anthropic_messages":
        system = request["system"]
        if isinstance(system, str):
            return system
        assert all(b.get("type") == "text" for b in system)
        return "".join(b["text"] for b in system)
    if mode == "codex_responses":
        assert isinstance(request["instructions"], str)
        return str(request["instructions"])
    assert request["messages"][0]["role"] in ("system", "developer")
    return str(request["messages"][0]["content"])


@pytest.fixture
def home(tmp_path) -> Path:
    made = tmp_path / "hermes"
    (made / "memory").mkdir(parents=True)
    (made / "memory" / "persona.md").write_text(f"## style\n\n- {FACT}\n")
    return made


@pytest.mark.parametrize("mode", ["chat_completions", "anthropic_messages", "codex_responses", "bedrock_converse"])
def test_hermes_own_request_of_every_mode_gets_the_persona_in_that_modes_shape(home, mode):
    built = build(mode)
    assert SYSTEM in system_text(mode, built)
    plugin = PersonaPlugin()
    with hermes_home_override(home):
        changed = plugin.on_llm_request(request=copy.deepcopy(built), session_id="s", api_mode=mode)
    plugin.close()
    assert changed is not None
    text = system_text(mode, changed["request"])
    assert SYSTEM in text and FACT in text
    assert {k: v for k, v in changed["request"].items() if k not in ("system", "instructions", "messages")} == \
        {k: v for k, v in built.items() if k not in ("system", "instructions", "messages")}


def test_two_gateway_users_at_once_in_one_thread_session_each_get_only_their_own_facts(home):
    from gateway.session_context import set_session_vars

    (home / "mnemosyne").mkdir()
    (home / "mnemosyne" / "persona.yaml").write_text("hermes:\n  profile: user_id\n")
    plugin, answers, facts = PersonaPlugin(), {}, {"alice": "Alice is diabetic.", "bob": "Bob plays the cello."}
    opening = [*MESSAGES, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and?"}]

    def user(name: str) -> None:
        set_session_vars(platform="slack", user_id=name, thread_id="T1")  # this thread's gateway context
        with hermes_home_override(home):
            added = plugin._handler("persona_add")({"content": facts[name], "topic": "care"}, session_id="T1")
            assert json.loads(added)["status"] == "ok"
            answers[name] = [plugin.on_llm_request(request={"messages": copy.deepcopy(opening)}, session_id="T1",
                                                   api_mode="chat_completions") for _ in range(3)]

    threads = [threading.Thread(target=user, args=(name,)) for name in facts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    plugin.close()
    for name, other in (("alice", "bob"), ("bob", "alice")):
        sent = json.dumps(answers[name])
        assert facts[name] in sent and facts[other] not in sent


def test_only_the_compressors_own_summary_refreshes_and_the_legacy_prefix_does_not(home):
    from agent.context_compressor import _SUMMARY_END_MARKER, LEGACY_SUMMARY_PREFIX, ContextCompressor

    plugin = PersonaPlugin()
    head = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"},
            {"role": "user", "content": "u2"}]

    def system(*turns: dict) -> str:
        with hermes_home_override(home):
            answer = plugin.on_llm_request(request={"messages": [MESSAGES[0], *turns]}, session_id="s",
                                           api_mode="chat_completions")
        return str(answer["request"]["messages"][0]["content"])

    assert system(*head).endswith(f"- {FACT}\n")
    (home / "memory" / "persona.md").write_text("## style\n\n- Answers in full sentences.\n")
    legacy = {"role": "user", "content": f"{LEGACY_SUMMARY_PREFIX} please refresh"}
    assert ContextCompressor._is_context_summary_content(legacy["content"])  # Hermes' detector says yes
    assert system(*head, legacy).endswith(f"- {FACT}\n")  # typed: no refresh
    summary = ContextCompressor._with_summary_prefix("## Active Task\nround 1") + "\n\n" + _SUMMARY_END_MARKER
    typed = {"role": "user", "content": summary}
    assert system(*head, legacy, {"role": "assistant", "content": "ok"}, typed).endswith(f"- {FACT}\n")
    compacted = [*head, {"role": "assistant", "content": summary}, {"role": "user", "content": "u3"}]
    assert system(*compacted).endswith("- Answers in full sentences.\n")  # rewritten history: a compaction
    plugin.close()
