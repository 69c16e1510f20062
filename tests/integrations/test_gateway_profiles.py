"""Issue #22, profiles from what the gateway knows: ``hermes.profile: user_or_session_key``.

A messaging platform names a user (``user_id``); Hermes' API server names only a gateway session key (the
client's X-Hermes-Session-Key, as ``gateway_session_key`` to a provider and ``HERMES_SESSION_KEY`` in the
plugin's session context). Real plugin and provider objects on real SQLite files; the session context is
set the way Hermes' own ``get_session_env`` falls back to the environment outside its gateway.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from pipeline.errors import NoProfile
from pipeline.integrations.hermes_binding import Identity, hermes_profile, load_hermes_settings
from pipeline.integrations.hermes_plugin import PersonaPlugin
from pipeline.integrations.hermes_provider import PersonaMemoryProvider

from ..conftest import write
from ..support.hermes_threads import on_new_thread

ALICE, BOB, OPERATOR = "Alice is diabetic.", "Bob plays the cello.", "OPERATOR SECRET"
MODE = "hermes:\n  profile: user_or_session_key\n"
CHAT = {"model": "m", "messages": [{"role": "system", "content": "You are Hermes."},
                                   {"role": "user", "content": "hi"}]}


@pytest.fixture
def home(hermes_home) -> Path:
    write(hermes_home / "mnemosyne" / "persona.yaml", MODE)
    return hermes_home


def as_client(monkeypatch, *, user: str = "", key: str = "", session: str = "sess-1") -> None:
    """What Hermes binds for one request: the API server sets the key to the session id when none was sent."""
    monkeypatch.setenv("HERMES_SESSION_USER_ID", user)
    monkeypatch.setenv("HERMES_SESSION_KEY", key or session)
    monkeypatch.setenv("HERMES_SESSION_ID", session)


def add(plugin: PersonaPlugin, fact: str) -> dict:
    return json.loads(plugin._handler("persona_add")({"content": fact, "topic": "care"}, session_id="tool"))


def system(plugin: PersonaPlugin, session_id: str) -> str:
    sent = copy.deepcopy(CHAT)
    answer = on_new_thread(lambda: plugin.on_llm_request(request=sent, session_id=session_id,
                                                         api_mode="chat_completions"))
    return str((answer or {"request": CHAT})["request"]["messages"][0]["content"])


def test_a_user_id_and_a_session_key_that_spell_the_same_string_get_different_profiles(home):
    settings = load_hermes_settings(home)
    names = ["alice", "key:alice", "user:alice", "default", "user:default", "key:", "user:"]
    from_users = [hermes_profile(settings, Identity(user_id=name)) for name in names]
    from_keys = [hermes_profile(settings, Identity(session_key=name)) for name in names]
    everything = from_users + from_keys
    assert len(set(everything)) == len(everything) and "default" not in everything
    assert hermes_profile(settings, Identity(user_id="alice")) == "alice"  # user ids keep today's profiles
    assert hermes_profile(settings, Identity(session_key="alice")) == "key:alice"
    # a user id wins over the key: a messaging platform names both, and the person is the user
    assert hermes_profile(settings, Identity("alice", "agent:main:slack:dm:1")) == "alice"


def test_a_request_naming_nobody_gets_no_persona_in_every_per_user_mode(home):
    settings = load_hermes_settings(home)
    with pytest.raises(NoProfile, match="neither a user nor a gateway session key"):
        hermes_profile(settings, Identity())
    strict = settings.model_copy(update={"hermes": settings.hermes.model_copy(update={"profile": "user_id"})})
    with pytest.raises(NoProfile, match="names no user"):
        hermes_profile(strict, Identity(session_key="bob"))  # user_id mode ignores keys, as before
    owner = settings.model_copy(update={"store": settings.store.model_copy(update={"profile": "key:bob"})})
    with pytest.raises(NoProfile, match="operator's profile 'key:bob'"):
        hermes_profile(owner, Identity(session_key="bob"))


def test_a_per_user_mode_needs_profile_in_the_persona_path(tmp_path, home):
    from pipeline import PersonaError
    from pipeline.config.load import load_settings

    write(home / "mnemosyne" / "persona.yaml", MODE + f"injection:\n  file: {tmp_path}/one.md\n")
    with pytest.raises(PersonaError, match=r"user_or_session_key.*must contain"):
        load_settings()


def test_two_api_server_clients_each_get_only_their_own_persona(plugin, monkeypatch):
    as_client(monkeypatch, key="alice-channel")
    assert add(plugin, ALICE)["status"] == "ok"
    as_client(monkeypatch, key="bob-channel")
    assert add(plugin, BOB)["status"] == "ok"
    for key, own, other in (("alice-channel", ALICE, BOB), ("bob-channel", BOB, ALICE)):
        as_client(monkeypatch, key=key, session="shared")  # the API server gives both the same session id
        text = system(plugin, "shared")
        assert own in text and other not in text


def test_a_client_without_a_session_key_gets_no_persona_and_no_tool(plugin, monkeypatch):
    as_client(monkeypatch, key="alice-channel")
    assert add(plugin, ALICE)["status"] == "ok"
    as_client(monkeypatch, session="sess-anon")  # the key is the session id: no key was sent
    assert ALICE not in system(plugin, "sess-anon")
    answer = add(plugin, OPERATOR)
    assert answer["status"] == "error" and "neither a user nor a gateway session key" in answer["error"]
    as_client(monkeypatch, user="key:alice-channel", session="s2")  # a user spelling the key's profile
    assert ALICE not in system(plugin, "s2")


def test_the_provider_takes_the_gateway_session_key_hermes_passes(home):
    providers = {}
    for key, fact in (("alice-channel", ALICE), ("bob-channel", BOB)):
        provider = providers[key] = PersonaMemoryProvider()
        provider.initialize("sess", hermes_home=str(home), platform="api_server", gateway_session_key=key)
        answer = json.loads(provider.handle_tool_call("persona_add", {"content": fact, "topic": "care"}))
        assert answer["status"] == "ok", answer
    for key, own, other in (("alice-channel", ALICE, BOB), ("bob-channel", BOB, ALICE)):
        fresh = PersonaMemoryProvider()
        fresh.initialize(f"new-{key}", hermes_home=str(home), platform="api_server", gateway_session_key=key)
        block = fresh.system_prompt_block()
        assert own in block and other not in block
        fresh.shutdown()
    anonymous = PersonaMemoryProvider()
    anonymous.initialize("anon", hermes_home=str(home), platform="api_server")
    assert anonymous.system_prompt_block() == ""
    for provider in providers.values():
        provider.shutdown()


# -- a compaction inside an API-server run (issue 27) -------------------------------------------------------

SUMMARY = {"role": "user", "content": "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into "
                                      "the summary below.\n## Active Task\nround 1"}


def api_server_run(monkeypatch, *, session: str, key: str = "") -> None:
    """What the API server binds when a run begins: the key (the session id when the client sent none), the
    session id, and the run's chat id, which is that same session id (gateway/platforms/api_server.py)."""
    as_client(monkeypatch, key=key, session=session)
    monkeypatch.setenv("HERMES_SESSION_PLATFORM", "api_server")
    monkeypatch.setenv("HERMES_SESSION_CHAT_ID", session)


def compacted(monkeypatch, new_session: str) -> None:
    """A compaction inside the run: Hermes' set_current_session_id moves the session id, and only it."""
    monkeypatch.setenv("HERMES_SESSION_ID", new_session)


def system_after_compaction(plugin: PersonaPlugin, session_id: str) -> str:
    sent = copy.deepcopy(CHAT)
    sent["messages"].insert(1, SUMMARY)
    answer = on_new_thread(lambda: plugin.on_llm_request(request=sent, session_id=session_id,
                                                         api_mode="chat_completions"))
    return str((answer or {"request": sent})["request"]["messages"][0]["content"])


def test_an_anonymous_run_stays_anonymous_after_a_compaction_rotates_its_session_id(plugin, monkeypatch):
    api_server_run(monkeypatch, session="api-opening")  # two clients with the same opening share this id
    assert system(plugin, "api-opening") == "You are Hermes."
    compacted(monkeypatch, "20261201_120000_abcdef")
    assert system_after_compaction(plugin, "20261201_120000_abcdef") == "You are Hermes."
    answer = add(plugin, OPERATOR)  # the first client's write would reach the second
    assert answer["status"] == "error" and "neither a user nor a gateway session key" in answer["error"]
    api_server_run(monkeypatch, session="api-opening")  # the other client, same opening
    compacted(monkeypatch, "20261201_120500_fedcba")
    assert OPERATOR not in system_after_compaction(plugin, "20261201_120500_fedcba")


def test_a_keyed_run_keeps_its_key_through_a_compaction(plugin, monkeypatch):
    api_server_run(monkeypatch, session="api-opening", key="alice-channel")
    assert add(plugin, ALICE)["status"] == "ok"
    assert ALICE in system(plugin, "api-opening")
    compacted(monkeypatch, "20261201_121000_aaaaaa")
    assert ALICE in system_after_compaction(plugin, "20261201_121000_aaaaaa")
    assert add(plugin, BOB)["status"] == "ok"  # written to alice-channel's own profile
    api_server_run(monkeypatch, session="api-opening", key="bob-channel")
    assert ALICE not in system(plugin, "api-opening") and BOB not in system(plugin, "api-opening")
