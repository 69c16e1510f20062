"""A store change reaches the prompt with no cron: hosts render what is due before they build or refresh a persona.

Driven through the general Hermes plugin's own entry points (the llm_request middleware and its tool
handlers) on new threads, as Hermes calls them; the real agent is in tests/hermes_host/test_fact_life.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import PersonaStore, resolve_target
from pipeline.integrations.hermes_binding import hermes_settings
from pipeline.integrations.hermes_plugin import PersonaPlugin
from pipeline.integrations.hermes_request import SUMMARY_END

from ..conftest import REPO, write
from ..support.hermes_threads import on_new_thread
from .text_traces import caches_holding

FIRST, ADDED, BOB = "Answers tersely.", "Uses pnpm for JavaScript packages.", "Bob plays the cello."
SECRET = "Keeps the spare key at 12 Quiet Lane."
SUMMARY = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below. ..."


def chat(*turns: dict) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": "You are Hermes."}, *turns]}


def summary(n: int) -> dict:
    return {"role": "assistant", "content": f"{SUMMARY}\n## Active Task\nround {n}\n\n{SUMMARY_END}"}


HEAD = [{"role": "user", "content": "u1"}, {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}]


@pytest.fixture
def home(two_users):
    return two_users(FIRST, BOB)


def system(plugin: PersonaPlugin, session: str, *turns: dict, **context: str) -> str:
    answer = on_new_thread(lambda: plugin.on_llm_request(request=chat(*turns), session_id=session,
                                                         api_mode="chat_completions", **context))
    return str(answer["request"]["messages"][0]["content"]) if answer else ""


def tool(plugin: PersonaPlugin, name: str, args: dict, session: str = "s1") -> dict:
    return json.loads(on_new_thread(lambda: plugin._handler(name)(args, session_id=session)))


def test_a_fact_added_mid_session_appears_after_the_next_compaction_and_in_a_new_session(home):
    plugin = PersonaPlugin()
    first = system(plugin, "s1", *HEAD)
    assert FIRST in first and BOB not in first  # rendered at session start, no file was there before
    added = tool(plugin, "persona_add", {"content": ADDED, "topic": "tools"})
    assert added["created"] is True and "next compaction" in added["takes_effect"]
    settings = hermes_settings(home)
    assert added["rendered"] == [settings.injection.target]  # the write rendered the file once, at once...
    assert ADDED in resolve_target(settings, settings.injection.target).path.read_text()
    # ... and the running session keeps its snapshot: warm, byte-identical
    assert system(plugin, "s1", *HEAD, {"role": "assistant", "content": "a2"}) == first
    compacted = system(plugin, "s1", HEAD[0], summary(1), {"role": "user", "content": "u3"})
    assert ADDED in compacted and FIRST in compacted and BOB not in compacted
    fresh = system(plugin, "s2", {"role": "user", "content": "new"})
    assert ADDED in fresh and BOB not in fresh
    plugin.close()


def test_a_locked_store_never_blocks_the_prompt_and_the_last_good_text_is_served(home):
    plugin = PersonaPlugin()
    first = system(plugin, "s1", *HEAD)
    settings = hermes_settings(home)
    with PersonaStore.from_settings(settings) as writer:  # a write that renders nothing (the Python API's)
        writer.add(ADDED, topic="tools")
    with PersonaStore.from_settings(settings) as worker, worker.profile_lock(0) as held:  # a tick is rendering
        assert held
        compacted = system(plugin, "s1", HEAD[0], summary(1), {"role": "user", "content": "u3"})
    assert compacted == first  # the file as last rendered: no wait, no new fact yet
    assert ADDED in system(plugin, "s1", HEAD[0], summary(2), {"role": "user", "content": "u4"})
    plugin.close()


def test_a_forget_through_the_plugin_leaves_the_very_next_request(home):
    plugin = PersonaPlugin()
    assert FIRST in system(plugin, "s1", *HEAD)
    listed = tool(plugin, "persona_list", {})
    fact_id = next(p["id"] for p in listed["personas"] if p["content"] == FIRST)
    assert tool(plugin, "persona_forget", {"persona_id": fact_id})["forgotten"] is True
    after = system(plugin, "s1", *HEAD, {"role": "assistant", "content": "a2"})  # no compaction in between
    assert FIRST not in after
    plugin.close()


def test_a_forget_by_another_process_is_noticed_at_the_next_check(home, monkeypatch):
    (home / "mnemosyne").mkdir(exist_ok=True)
    (home / "mnemosyne" / "persona.yaml").write_text("injection:\n  check_interval_ms: 0\n")
    plugin = PersonaPlugin()
    assert FIRST in system(plugin, "s1", *HEAD)
    settings = hermes_settings(home)
    from pipeline.schedule.forget import forget

    with PersonaStore.from_settings(settings) as cli:  # `persona forget` while Hermes runs
        forget(settings, cli, cli.list()[0].id)
    assert FIRST not in system(plugin, "s1", *HEAD, {"role": "assistant", "content": "a2"})
    plugin.close()


def test_a_forget_by_the_cli_leaves_no_text_cache_of_the_running_plugin_holding_it(home):
    """A real `persona forget` in its own process: the plugin's next request goes without the text, and no cache of
    this process that may hold fact text holds it (the plugin compared the store's erasure stamp); bob keeps his."""
    (home / "mnemosyne").mkdir(exist_ok=True)
    (home / "mnemosyne" / "persona.yaml").write_text("injection:\n  check_interval_ms: 0\n")
    plugin = PersonaPlugin()
    secret = tool(plugin, "persona_add", {"content": SECRET, "topic": "home"})["persona_id"]
    assert SECRET in system(plugin, "s1", *HEAD) and SECRET in system(plugin, "s2", *HEAD)
    assert caches_holding(SECRET)  # the plugin keeps what it served: the check below can see it
    done = subprocess.run([sys.executable, "-m", "pipeline", "forget", str(secret)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HERMES_HOME": str(home)}, timeout=120)
    assert done.returncode == 0, done.stderr
    after = system(plugin, "s1", *HEAD, {"role": "assistant", "content": "a2"})
    assert SECRET not in after and FIRST in after
    assert caches_holding(SECRET) == []
    assert SECRET not in system(plugin, "s2", *HEAD, {"role": "assistant", "content": "a2"})
    with PersonaStore.from_settings(hermes_settings(home), profile="bob") as bob:
        assert [fact.content for fact in bob.list()] == [BOB]
    plugin.close()


def test_a_subagent_may_read_the_persona_but_its_writes_are_refused(home):
    plugin = PersonaPlugin()
    system(plugin, "child", {"role": "user", "content": "task"}, platform="subagent")
    refused = tool(plugin, "persona_add", {"content": ADDED, "topic": "tools"}, session="child")
    assert refused["status"] == "error" and "subagent" in refused["error"]
    assert tool(plugin, "persona_list", {}, session="child")["count"] == 1
    assert tool(plugin, "persona_add", {"content": ADDED, "topic": "tools"}, session="s1")["created"] is True
    plugin.close()


def test_what_another_hosts_model_saved_reaches_the_next_compaction_and_session_and_not_what_hermes_saved(home):
    """The plugin learns where it renders what is due: Gemini CLI's new entry reaches the next compaction and a new
    session; an entry of Hermes' own memory tool is not written into Hermes' prompt again (Hermes loads USER.md)."""
    gemini_md = write(Path.home() / ".gemini" / "GEMINI.md", "# Mine\n\n- Use 4 spaces.\n")
    plugin = PersonaPlugin()
    first = system(plugin, "s1", *HEAD)  # the session start learns: Gemini's file is noted as it stands
    assert "Use 4 spaces." not in first
    gemini_md.write_text(gemini_md.read_text() + f"\n## Gemini Added Memories\n- {ADDED}\n")
    write(home / "memories" / "USER.md", SECRET)  # Hermes' memory tool saved it: Hermes loads it itself
    compacted = system(plugin, "s1", HEAD[0], summary(1), {"role": "user", "content": "u3"})
    assert ADDED in compacted and FIRST in compacted and BOB not in compacted and SECRET not in compacted
    fresh = system(plugin, "s2", {"role": "user", "content": "new"})
    assert ADDED in fresh and SECRET not in fresh
    with PersonaStore.from_settings(hermes_settings(home)) as store:
        assert {fact.writer for fact in store.list() if fact.content in (ADDED, SECRET)} == {"learn:gemini",
                                                                                           "learn:hermes"}
    with PersonaStore.from_settings(hermes_settings(home), profile="bob") as bob:
        assert ADDED not in {fact.content for fact in bob.list()}  # bob's sessions learn into bob's profile
    plugin.close()
