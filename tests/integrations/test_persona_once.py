"""One persona block: beside Mnemosyne's own persona injection of the same file, the prompt carries it once.

Driven through the general Hermes plugin's middleware on new threads, with the request shapes Hermes 0.19
sends (its system prompt as Hermes joins it: Mnemosyne's block, then its timestamp line). The real agent
with MNEMOSYNE_PERSONA_ENABLED=true is in tests/hermes_host/test_fact_life.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.integrations.hermes_binding import hermes_settings
from pipeline.integrations.hermes_plugin import PersonaPlugin

from ..support.hermes_threads import on_new_thread

HEADER = "# L3 Persona (Active Behavioral Rules)"
FACT, OLD, BOB = "Answers tersely.", "Uses npm for JavaScript packages.", "Bob plays the cello."
MNEMOSYNE = "# Mnemosyne Memory\nActive (native local memory). Use mnemosyne_remember to store ANY durable fact."
STAMP = "Conversation started: Tuesday, December 01, 2026\nModel: fake-model"


@pytest.fixture
def home(two_users, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return two_users(FACT, BOB)


def hermes_system(copy: str | None) -> str:
    """Hermes' system prompt with Mnemosyne's block (and its persona copy, if any), as Hermes joins them."""
    block = MNEMOSYNE if copy is None else f"{MNEMOSYNE}\n\n{HEADER}\n{copy}".rstrip()
    return f"You are Hermes.\n\n{block}\n\n{STAMP}"


def shaped(system: str, api_mode: str) -> dict:
    turn = [{"role": "user", "content": "hello"}]
    if api_mode == "chat_completions":
        return {"model": "m", "messages": [{"role": "system", "content": system}, *turn]}
    if api_mode == "anthropic_messages":
        return {"model": "m", "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "messages": turn}
    if api_mode == "bedrock_converse":
        return {"modelId": "m", "system": [{"text": system}], "messages": turn}
    return {"model": "m", "instructions": system, "input": turn}


def system_of(request: dict) -> str:
    if "instructions" in request:
        return request["instructions"]
    if "system" in request:
        return "".join(block["text"] for block in request["system"])
    return request["messages"][0]["content"]


def send(plugin: PersonaPlugin, request: dict, api_mode: str, session: str = "s1") -> str:
    answer = on_new_thread(lambda: plugin.on_llm_request(request=request, session_id=session, api_mode=api_mode))
    return system_of(answer["request"] if answer else request)


def persona_file(home: Path) -> str:
    """The file as rendered for the first chat (what Mnemosyne reads when Hermes builds the prompt)."""
    plugin = PersonaPlugin()
    send(plugin, shaped("You are Hermes.", "chat_completions"), "chat_completions", session="warm-up")
    plugin.close()
    return (home / "memory" / "persona.md").read_text()


MODES = ["chat_completions", "anthropic_messages", "bedrock_converse", "codex_responses"]


@pytest.mark.parametrize("api_mode", MODES)
def test_mnemosyne_copy_of_the_same_persona_is_replaced_in_place_and_the_block_appears_once(home, api_mode):
    copy = persona_file(home)
    plugin = PersonaPlugin()
    sent = send(plugin, shaped(hermes_system(copy), api_mode), api_mode)
    assert sent.count(HEADER) == 1 and sent.count(FACT) == 1 and BOB not in sent
    assert sent.index(MNEMOSYNE) < sent.index(HEADER) < sent.index(STAMP)  # Mnemosyne's place, kept
    again = send(plugin, shaped(hermes_system(copy), api_mode), api_mode)
    assert again == sent  # byte-identical on every request: the prompt cache holds
    plugin.close()


def test_without_mnemosyne_copy_the_block_is_appended_as_before(home):
    persona_file(home)
    plugin = PersonaPlugin()
    sent = send(plugin, shaped(hermes_system(None), "chat_completions"), "chat_completions")
    assert sent.rstrip().endswith(FACT) and sent.index(STAMP) < sent.index(HEADER)
    assert sent.count(HEADER) == 1 and BOB not in sent
    plugin.close()


def test_a_copy_of_another_file_is_left_alone(home):
    persona_file(home)
    plugin = PersonaPlugin()
    other = "## pets\n- The user's cat is called Ada."
    sent = send(plugin, shaped(hermes_system(other), "chat_completions"), "chat_completions")
    assert other in sent and FACT in sent  # not ours to remove: a user's true rule never vanishes
    plugin.close()


def test_an_older_copy_of_our_file_is_replaced_when_mnemosyne_injects_that_file(home, monkeypatch):
    """Mnemosyne read the file when Hermes built the prompt, before the plugin rendered a newer one (or before a
    forget): its copy differs from the session's persona, but it is of our file, so ours takes its place."""
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    # What Mnemosyne's mixin holds after importing with MNEMOSYNE_PERSONA_ENABLED=true and our file.
    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_ENABLED", True)
    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_FILE", home / "memory" / "persona.md")
    persona_file(home)
    plugin = PersonaPlugin()
    stale = f"## tools\n- {OLD}"
    sent = send(plugin, shaped(hermes_system(stale), "anthropic_messages"), "anthropic_messages")
    assert OLD not in sent and sent.count(HEADER) == 1 and FACT in sent and BOB not in sent
    assert sent.index(HEADER) < sent.index(STAMP)
    plugin.close()


def test_a_forget_takes_the_text_out_of_mnemosyne_copy_from_the_next_request(home, monkeypatch):
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_ENABLED", True)
    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_FILE", home / "memory" / "persona.md")
    copy = persona_file(home)  # Hermes' cached prompt keeps this copy until its next rebuild
    plugin = PersonaPlugin()
    assert FACT in send(plugin, shaped(hermes_system(copy), "chat_completions"), "chat_completions")
    with PersonaStore.from_settings(hermes_settings(home)) as store:
        fact_id = next(fact.id for fact in store.list() if fact.content == FACT)
    forgot = json.loads(on_new_thread(lambda: plugin._handler("persona_forget")({"persona_id": fact_id},
                                                                              session_id="s1")))
    assert forgot["status"] == "ok"
    sent = send(plugin, shaped(hermes_system(copy), "chat_completions"), "chat_completions")
    assert FACT not in sent and BOB not in sent and MNEMOSYNE in sent and STAMP in sent
    plugin.close()


def install(home: Path):
    return CliRunner().invoke(app, ["hermes", "install", "--hermes-home", str(home)])


def test_install_says_when_mnemosyne_injects_the_same_file_and_how_to_turn_it_off(home):
    (home / ".env").write_text(f"MNEMOSYNE_PERSONA_ENABLED=true\nMNEMOSYNE_PERSONA_FILE={home}/memory/persona.md\n")
    done = install(home)
    assert done.exit_code == 0, done.output
    assert "Mnemosyne injects the same persona file too" in done.output
    assert f"set MNEMOSYNE_PERSONA_ENABLED=false in {home / '.env'}" in done.output


def test_install_says_nothing_of_mnemosyne_when_its_injection_is_off_or_of_another_file(home, tmp_path):
    assert "Mnemosyne injects" not in install(home).output
    (home / ".env").write_text(f"MNEMOSYNE_PERSONA_ENABLED=true\nMNEMOSYNE_PERSONA_FILE={tmp_path}/elsewhere.md\n")
    assert "Mnemosyne injects" not in install(home).output
    (home / ".env").write_text("MNEMOSYNE_PERSONA_ENABLED=false\n")
    assert "Mnemosyne injects" not in install(home).output


def test_a_copy_cut_by_mnemosyne_word_cap_is_recognised_by_its_text(home, monkeypatch):
    """Mnemosyne's own mixin makes the copy, cut by its word cap (MNEMOSYNE_PERSONA_TOKEN_CAP=6 at its import);
    its in-process settings do not say which file, so the plugin goes by the text alone."""
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_TOKEN_CAP", 6)
    with PersonaStore.from_settings(hermes_settings(home)) as store:
        store.add(OLD, topic="tools")
    persona_file(home)

    class Mnemosyne(HermesPersonaPromptMixin):
        PERSONA_ENABLED = True
        PERSONA_FILE = home / "memory" / "persona.md"

    copy = Mnemosyne()._with_persona_block(MNEMOSYNE)
    assert "(truncated, see persona file for full content)" in copy
    plugin = PersonaPlugin()
    sent = send(plugin, shaped(f"You are Hermes.\n\n{copy}\n\n{STAMP}", "chat_completions"), "chat_completions")
    assert sent.count(HEADER) == 1 and "truncated" not in sent and FACT in sent and OLD in sent and BOB not in sent
    assert sent.index(HEADER) < sent.index(STAMP)
    plugin.close()


def test_a_forget_of_the_last_section_takes_it_out_of_mnemosyne_copy_too(home, monkeypatch):
    """A copy read before the forget starts with the persona the forget leaves (the same sections, less the last):
    all of the copy is replaced, never only the part that matches, or the forgotten section stayed after it."""
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_ENABLED", True)
    monkeypatch.setattr(HermesPersonaPromptMixin, "PERSONA_FILE", home / "memory" / "persona.md")
    secret = "The user's therapist is Dr. Ortiz."
    with PersonaStore.from_settings(hermes_settings(home)) as store:
        secret_id = store.add(secret, topic="zz health", tier="working", confidence=0.1).fact.id
    copy = persona_file(home)
    assert copy.index(FACT) < copy.index(secret)  # the forgotten section is the copy's last
    plugin = PersonaPlugin()
    assert secret in send(plugin, shaped(hermes_system(copy), "chat_completions"), "chat_completions")
    forgot = json.loads(on_new_thread(lambda: plugin._handler("persona_forget")({"persona_id": secret_id},
                                                                              session_id="s1")))
    assert forgot["status"] == "ok"
    sent = send(plugin, shaped(hermes_system(copy), "chat_completions"), "chat_completions")
    assert secret not in sent and FACT in sent and sent.count(FACT) == 1 and STAMP in sent
    plugin.close()
