"""A fact's whole life reaches the prompt by itself in the real Hermes Agent 0.19: added, corrected, forgotten.

Each scenario (tests/hermes_host/fact_life.py) runs `hermes chat`'s own objects in a process of its own
against the fake model on loopback: every turn on a new thread, /compress on the process_loop thread, the
model's tool calls dispatched by Hermes. Everything is checked from the requests the fake model received.
"""

from __future__ import annotations

import json

import pytest

from .fact_life import ADDED, CHILD, ELSEWHERE, HERE, HERMES_ONLY, KEPT, LEARNED, MOVED, NOW, PROMOTED, SECRET
from .test_real_hermes import scenarios

HEADER = "# L3 Persona (Active Behavioral Rules)"
BOB = "Bob plays the cello."
STAMP = "\n\nConversation started: "
MODES = ["life_beside_mnemosyne", "life_as_provider"]


@pytest.fixture(scope="module")
def life(tmp_path_factory):
    return scenarios(tmp_path_factory, "tests.hermes_host.fact_life")


def persona(prompt: str) -> str:
    assert HEADER in prompt, prompt[-2000:]
    return prompt[prompt.index(HEADER):]


@pytest.mark.parametrize("mode", [*MODES, "life_mnemosyne_persona"])
def test_a_fact_added_by_a_tool_call_appears_after_compress_and_in_a_new_session(life, mode):
    result = life(mode)
    prompt, answer = result["notes"]["add"]
    assert json.loads(answer)["created"] is True and "next compaction" in json.loads(answer)["takes_effect"]
    assert ADDED not in prompt and result["prompts"]["after_add"] == result["prompts"]["first"]  # the cache holds
    assert ADDED in persona(result["prompts"]["after_add_compress"])
    assert ADDED in persona(result["prompts"]["new_session"])
    assert result["notes"]["writers"][ADDED] == "tool:hermes"  # stamped by our code, whatever the model says
    assert result["notes"]["writers"][KEPT] == "cli"


@pytest.mark.parametrize("mode", [*MODES, "life_mnemosyne_persona"])
def test_a_replace_swaps_old_for_new_at_the_next_compaction(life, mode):
    result = life(mode)
    prompt, answer = result["notes"]["replace"]
    assert json.loads(answer)["status"] == "ok" and MOVED in prompt  # this generation keeps its persona
    after = persona(result["prompts"]["after_replace_compress"])
    assert MOVED not in after and NOW in after and KEPT in after
    assert MOVED not in result["prompts"]["new_session"] and NOW in result["prompts"]["new_session"]


@pytest.mark.parametrize("mode", ["life_beside_mnemosyne", "life_mnemosyne_persona"])
def test_beside_mnemosyne_a_forget_leaves_the_very_next_request(life, mode):
    result = life(mode)
    before = result["prompts"]["after_replace_compress"]
    prompt, answer = result["notes"]["forget"]  # the request that carried the forget's answer back
    assert SECRET in before and json.loads(answer)["forgotten"] is True
    assert SECRET not in prompt and KEPT in persona(prompt)
    assert all(SECRET not in result["prompts"][label] for label in ("after_forget_compress", "new_session"))


def test_as_the_exclusive_provider_a_forget_leaves_at_the_next_compaction(life):
    """Hermes 0.19 caches the system prompt and gives a provider no way to invalidate it (README, Hermes)."""
    result = life("life_as_provider")
    prompt, answer = result["notes"]["forget"]
    assert json.loads(answer)["forgotten"] is True and SECRET in prompt  # the cached prompt, until a rebuild
    assert SECRET not in result["prompts"]["after_forget_compress"]
    assert SECRET not in result["prompts"]["new_session"]


@pytest.mark.parametrize("mode", [*MODES, "life_mnemosyne_persona"])
def test_a_delegate_task_subagent_cannot_write_the_persona(life, mode):
    result = life(mode)
    assert result["notes"]["child_add"] is not None  # the child really asked for persona_add
    answer = result["notes"]["child_add"][1]
    assert '"created"' not in answer
    # Neither the provider nor the plugin offers a subagent a write tool: Hermes refuses the call itself (or,
    # where its dispatch still reaches ours, our handler refuses it).
    assert "does not exist" in answer or (json.loads(answer)["status"] == "error" and "may only read" in answer)
    offered = result["notes"]["child_tools"]
    assert offered is not None and not {"persona_add", "persona_forget", "persona_replace"} & set(offered)
    if mode != "life_as_provider":  # beside Mnemosyne the plugin still lets a child read the persona
        assert "persona_list" in offered
    assert CHILD not in result["notes"]["facts"]
    assert set(result["notes"]["facts"]) == {KEPT, ADDED, NOW}


def test_with_mnemosyne_persona_injection_on_install_says_so_and_the_block_appears_once(life):
    result = life("life_mnemosyne_persona")
    assert "MNEMOSYNE_PERSONA_ENABLED=false" in result["notes"]["install"]
    for label, prompt in result["prompts"].items():
        assert "# Mnemosyne Memory" in prompt, label
        assert prompt.count(HEADER) == 1, label
        # In Mnemosyne's place (its block ends right before Hermes' timestamp line): replaced, not appended.
        assert prompt.index("# Mnemosyne Memory") < prompt.index(HEADER) < prompt.index(STAMP), label


def test_without_mnemosyne_persona_injection_the_block_is_appended_once(life):
    result = life("life_beside_mnemosyne")
    assert "MNEMOSYNE_PERSONA_ENABLED" not in result["notes"]["install"]
    for label, prompt in result["prompts"].items():
        assert prompt.count(HEADER) == 1 and prompt.index(STAMP) < prompt.index(HEADER), label


@pytest.mark.parametrize("mode", [*MODES, "life_mnemosyne_persona"])
def test_the_other_user_never_appears_and_nothing_went_wrong(life, mode):
    result = life(mode)
    prompts = [*result["prompts"].values(), *(n[0] for k, n in result["notes"].items()
                                              if k in ("add", "replace", "forget", "child_add"))]
    assert all(BOB not in prompt for prompt in prompts)
    assert [p for p in result["problems"] if not p[0].startswith("hermes_memory_provider")] == []
    assert result["persona_warnings"] == [] and result["off_box"] == []


def test_mnemosynes_own_promote_and_demote_reach_the_prompt_after_compress_and_in_a_new_session(life):
    """Mnemosyne's tools write memoria_persona directly, beside ours: every writer is seen."""
    result = life("mnemosyne_tools")
    prompt, answer = result["notes"]["promote"]
    assert json.loads(answer)["status"] == "ok" and PROMOTED not in prompt  # the session keeps its persona...
    for label in ("after_promote_compress", "after_promote_new_session"):  # ...until the next compaction
        assert PROMOTED in persona(result["prompts"][label]) and KEPT in persona(result["prompts"][label]), label
    assert json.loads(result["notes"]["demote"][1])["status"] == "ok"
    for label in ("after_demote_compress", "after_demote_new_session"):
        assert KEPT not in persona(result["prompts"][label]) and PROMOTED in persona(result["prompts"][label]), label
    assert KEPT not in result["notes"]["facts"] and PROMOTED in result["notes"]["facts"]


def test_a_chat_started_in_a_project_carries_its_facts_and_the_hermes_ones_and_no_other_projects(life):
    result = life("scopes")
    first = persona(result["prompts"]["first"])
    assert HERE in first and HERMES_ONLY in first and KEPT in first and ELSEWHERE not in first
    assert first.count(HERE) == 1 and BOB not in first
    _, answer = result["notes"]["add"]
    assert json.loads(answer)["fact"]["scope"] == "project:github.com/acme/shop"
    after = persona(result["prompts"]["after_add_compress"])
    assert ADDED in after and HERE in after and ELSEWHERE not in after
    assert result["notes"]["scopes"][ELSEWHERE] == "project:github.com/acme/blog"
    assert result["notes"]["scopes"][HERMES_ONLY] == "host:hermes" and result["notes"]["scopes"][KEPT] == "global"


def test_what_hermes_memory_tool_saves_reaches_codex_once_and_hermes_once_from_its_own_memory(life):
    """Said once to Hermes (its model's `memory` tool), learned with no cron: Codex's file carries it once, and
    Hermes' prompt after the next compaction carries it once, from USER.md, never again in our block."""
    result = life("learns_memory")
    _, answer = result["notes"]["remember"]
    assert json.loads(answer).get("success") is True, answer
    assert LEARNED in result["notes"]["user_md"]
    assert result["notes"]["writers"][LEARNED] == "learn:hermes"
    assert result["notes"]["codex"].count(LEARNED) == 1 and KEPT in result["notes"]["codex"]
    prompt = result["prompts"]["after_memory_compress"]
    assert prompt.count(LEARNED) == 1 and LEARNED not in persona(prompt) and KEPT in persona(prompt)
    assert BOB not in result["notes"]["codex"] and BOB not in prompt
