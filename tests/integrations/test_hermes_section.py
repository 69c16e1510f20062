"""Hermes 0.22 and later: the persona as the host's own plugin prompt section (`persona-tier`).

The host here is a stand-in for Hermes' PluginContext with the 0.22 API (register_system_prompt_section beside
register_middleware and register_tool); it calls the section with the read-only mapping Hermes passes
(session_id, model, provider, platform, profile_name, cwd) and keeps nothing else. `make test-hermes-next`
drives the real agent.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import sqlite3
import subprocess
import sys
import types
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from pipeline.integrations.hermes_plugin import PersonaPlugin
from pipeline.integrations.hermes_section import SECTION

from ..conftest import REPO
from .test_hermes_plugin import USER, chat, system_of
from .test_hermes_scopes import in_gateway, repository

HEADER = "# L3 Persona (Active Behavioral Rules)"
SECRET = "Lives at 12 Quiet Lane, flat 3."
BOBS_FACT = "Bob writes Haskell only."
SECTIONS_START, SECTIONS_END = "<!-- hermes-plugin-sections:start -->", "<!-- hermes-plugin-sections:end -->"


class Host:
    """What a plugin's register(ctx) sees of Hermes: with ``sections``, the 0.22 API; without, 0.19's."""

    def __init__(self, *, sections: bool) -> None:
        self.sections: dict[str, tuple[Callable[[Any], str], int]] = {}
        self.middleware: list[Callable[..., Any]] = []
        self.tools: dict[str, Callable[..., str]] = {}
        # Hermes' plugin manager, whose registry of every plugin's sections a plugin's ctx reaches (ctx._manager).
        self._manager = types.SimpleNamespace(_system_prompt_sections={})
        if sections:
            self.register_system_prompt_section = self._register_section

    def _register_section(self, id: str, content: str | Callable[[Any], str], *, position: str = "after_memory",
                          max_chars: int = 4000) -> None:
        if id in self.sections or not 0 < max_chars <= 4000 or position != "after_memory":
            raise ValueError(f"refused section {id}")
        self.sections[id] = (content, max_chars)
        self._manager._system_prompt_sections[id] = types.SimpleNamespace(
            id=id, content=content, position=position, max_chars=max_chars, plugin=id)

    def info(self, session_id: str = "s1", cwd: Path | str = "", profile_name: str = "default") -> Any:
        return types.MappingProxyType({"session_id": session_id, "model": "m", "provider": "custom",
                                       "platform": "cli", "profile_name": profile_name, "cwd": str(cwd)})

    def prompt_sections(self, session_id: str = "s1") -> dict[str, str]:
        """Every plugin's section as Hermes 0.22 renders them (render_system_prompt_sections): in id order, each
        framed, skipped whole when over its max_chars or when it would take the lot past 8,000 characters."""
        total, shown = len(SECTIONS_START) + len(SECTIONS_END) + 2, {}
        for id, (content, max_chars) in sorted(self.sections.items()):
            try:
                text = (content(self.info(session_id)) if callable(content) else content).strip()
            except ZeroDivisionError:  # Hermes skips a section that raises
                continue
            framed = len(f"## Plugin Context: {id}\n<!-- hermes-plugin-section-chars:{len(text)} -->\n\n") + len(text)
            framed += 2 if shown else 0
            if text and len(text) <= max_chars and total + framed <= 8000:
                shown[id], total = text, total + framed
        return shown

    def register_middleware(self, kind: str, callback: Callable[..., Any]) -> None:
        assert kind == "llm_request"
        self.middleware.append(callback)

    def register_tool(self, *, name: str, handler: Callable[..., str], **_: Any) -> None:
        self.tools[name] = handler

    def render(self, session_id: str = "s1", cwd: Path | str = "", profile_name: str = "default") -> str:
        """What Hermes frames under `## Plugin Context: persona-tier`, or None where it would skip it."""
        content, max_chars = self.sections[SECTION.id]
        assert callable(content)
        text = content(self.info(session_id, cwd, profile_name)).strip()
        assert len(text) <= max_chars  # the host would skip it whole
        return text

    def send(self, request: dict, session_id: str = "s1") -> dict:
        sent = copy.deepcopy(request)
        answer = self.middleware[0](request=sent, session_id=session_id, api_mode="chat_completions")
        return answer["request"] if answer else request

    def tool(self, name: str, args: dict, session_id: str = "writer") -> dict:
        return json.loads(self.tools[name](args, session_id=session_id))


def unreadable(hermes_home: Path) -> None:
    """The store is garbage now (under the open connection too), and the persona file cannot be read either."""
    database = hermes_home / "mnemosyne" / "data" / "mnemosyne.db"
    with database.open("r+b") as broken:
        broken.write(b"not a database " * (database.stat().st_size // 15 + 1))
    for leftover in database.parent.glob("mnemosyne.db-*"):
        leftover.write_bytes(b"garbage")
    persona_file = hermes_home / "memory" / "persona.md"
    persona_file.unlink()
    persona_file.mkdir()


@pytest.fixture
def plugged(hermes_home: Path) -> Callable[..., Host]:
    made: list[PersonaPlugin] = []

    def plug(*, sections: bool = True) -> Host:
        plugin, host = PersonaPlugin(), Host(sections=sections)
        plugin.register(host)
        made.append(plugin)
        return host

    yield plug
    for plugin in made:
        plugin.close()


@pytest.fixture
def projects(tmp_path: Path) -> dict[str, Path]:
    return {"shop": repository(tmp_path / "shop", "git@github.com:acme/shop.git"),
            "blog": repository(tmp_path / "blog", "https://github.com/acme/blog")}


def test_where_the_host_has_sections_the_persona_is_one_section_and_the_middleware_adds_no_block(plugged):
    host = plugged()
    assert list(host.sections) == ["persona-tier"] and host.sections["persona-tier"][1] == 4000
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    text = host.render()
    assert text == f"{HEADER}\n## style\n\n- Answers tersely."
    request = chat(USER)
    assert host.send(request) == request  # the section is the only delivery: no second copy


def test_on_hermes_0_19_there_is_no_section_and_the_middleware_delivers(plugged):
    host = plugged(sections=False)
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    assert host.sections == {}
    assert system_of(host.send(chat(USER))).endswith(f"\n\n{HEADER}\n## style\n\n- Answers tersely.\n")


def test_a_host_that_refuses_the_section_gets_the_middleware_instead(plugged, caplog):
    taken = Host(sections=True)
    taken.sections[SECTION.id] = (lambda info: "another plugin's", 100)
    plugin = PersonaPlugin()
    with caplog.at_level(logging.WARNING):
        plugin.register(taken)
    taken.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    assert "Answers tersely." in system_of(taken.send(chat(USER)))
    assert "middleware delivers the persona instead" in caplog.text
    plugin.close()


def test_each_call_is_a_boundary_same_bytes_when_unchanged_the_new_fact_and_no_forgotten_one(plugged):
    """Hermes calls the section once per session and again only at its own boundaries (a compaction, /new):
    an unchanged store gives the same bytes; a change or a forget shows at the next call."""
    host = plugged()
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    secret = host.tool("persona_add", {"content": "The user's therapist is Dr. Ortiz.", "topic": "health"})
    first = host.render()
    assert host.render() == first  # an unchanged compaction
    host.tool("persona_add", {"content": "Uses uv, never pip.", "topic": "tools"})
    after_add = host.render()
    assert "Uses uv, never pip." in after_add and after_add != first
    assert host.tool("persona_forget", {"persona_id": secret["fact"]["id"]})["forgotten"] is True
    after_forget = host.render()
    assert "Dr. Ortiz" not in after_forget and "Answers tersely." in after_forget
    assert host.render(session_id="s2") == after_forget  # a new session: the same persona


def test_the_section_is_cut_to_the_hosts_4000_characters_at_section_boundaries(plugged):
    host = plugged()
    for topic in range(40):
        host.tool("persona_add", {"content": f"Rule {topic}: " + "keep this habit in mind. " * 5,
                                  "topic": f"topic{topic:02d}"})
    text = host.render()
    assert 3000 < len(text) <= 4000 and text.startswith(HEADER + "\n")
    body = text[len(HEADER) + 1:]
    for block in body.split("\n\n## ")[1:]:  # every section it keeps is whole: its heading and its fact
        assert block.startswith("topic") and "keep this habit in mind. " * 4 in block, block


def test_two_projects_by_the_sessions_working_directory(plugged, projects, monkeypatch):
    host = plugged()
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    for name, fact in (("shop", "Runs the shop's tests with vitest."), ("blog", "Deploys the blog with hugo.")):
        monkeypatch.setenv("TERMINAL_CWD", str(projects[name]))
        assert host.tool("persona_add", {"content": fact, "topic": "work", "scope": "project"})["status"] == "ok"
    monkeypatch.delenv("TERMINAL_CWD")
    shop = host.render(session_id="a", cwd=projects["shop"])
    blog = host.render(session_id="b", cwd=projects["blog"])
    assert "vitest" in shop and "hugo" not in shop and "Answers tersely." in shop
    assert "hugo" in blog and "vitest" not in blog and "Answers tersely." in blog


def test_per_user_profiles_leave_the_section_empty_and_the_middleware_serves_each_user_only_theirs(
        plugged, hermes_home, monkeypatch):
    (hermes_home / "mnemosyne").mkdir()
    (hermes_home / "mnemosyne" / "persona.yaml").write_text("hermes:\n  profile: user_id\n")
    host = plugged()
    facts = {"alice": "Alice is diabetic.", "bob": "Bob plays the cello."}
    for name, fact in facts.items():
        in_gateway(monkeypatch, name)
        assert host.tool("persona_add", {"content": fact, "topic": "care"}, session_id=f"T-{name}")["status"] == "ok"
        assert host.render(session_id=f"T-{name}") == ""  # never told the user: nobody's persona
    for name, other in (("alice", "bob"), ("bob", "alice")):
        in_gateway(monkeypatch, name)
        sent = system_of(host.send(chat(USER), session_id=f"T-{name}"))
        assert facts[name] in sent and facts[other] not in sent and sent.count(HEADER) == 1


def test_a_failing_call_returns_the_last_good_text_and_says_why(plugged, hermes_home, caplog):
    host = plugged()
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    good = host.render()
    unreadable(hermes_home)
    with caplog.at_level(logging.WARNING):
        assert host.render() == good  # the same session, at its next compaction
        assert host.render(session_id="s-new") == good  # a new session of the same persona
    assert "could not read the persona" in caplog.text and "kept the last good text" in caplog.text
    assert "Answers tersely." not in caplog.text  # fact text never logged above debug


def test_after_a_forget_in_another_process_a_failing_call_serves_no_forgotten_text(plugged, hermes_home, caplog):
    """The last good text is dropped when the store's erasure stamp moves (read before every call), so a call that
    fails after a forget made by the CLI serves nothing rather than the persona from before it; the other profile
    of the store keeps its facts."""
    from pipeline import PersonaStore

    host = plugged()
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    secret = host.tool("persona_add", {"content": SECRET, "topic": "home"})["persona_id"]
    database = hermes_home / "mnemosyne" / "data" / "mnemosyne.db"
    with PersonaStore(database, profile="bob") as bob:
        bob.add(BOBS_FACT, topic="music")
    assert SECRET in host.render() and SECRET in host.render(session_id="s2")
    done = subprocess.run([sys.executable, "-m", "pipeline", "forget", str(secret)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HERMES_HOME": str(hermes_home)},
                          cwd=hermes_home, timeout=120)
    assert done.returncode == 0, done.stderr
    persona_file = hermes_home / "memory" / "persona.md"
    persona_file.unlink()
    persona_file.mkdir()  # nor can the file be read
    with closing(sqlite3.connect(database, isolation_level=None)) as writer, caplog.at_level(logging.WARNING):
        writer.execute("BEGIN IMMEDIATE")  # another writer holds the store: it can be read, never rendered
        for session in ("s1", "s2", "s-new"):
            shown = host.render(session_id=session)
            assert SECRET not in shown and BOBS_FACT not in shown
        writer.execute("ROLLBACK")
    assert "could not read the persona" in caplog.text and SECRET not in caplog.text
    with PersonaStore(database, profile="bob") as bob:
        assert [fact.content for fact in bob.list()] == [BOBS_FACT]


def test_after_a_forget_in_another_process_a_store_that_cannot_be_read_serves_no_forgotten_text(
        plugged, hermes_home, caplog):
    """The store is garbage right after another process's forget, so its erasure stamp cannot be read: the stamp
    the forget left in the records says a forget happened, and the last good text is not served. Before any
    forget, the same failure still serves the last good text."""
    host = plugged()
    host.tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
    secret = host.tool("persona_add", {"content": SECRET, "topic": "home"})["persona_id"]
    assert SECRET in host.render() and SECRET in host.render(session_id="s2")
    done = subprocess.run([sys.executable, "-m", "pipeline", "forget", str(secret)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "HERMES_HOME": str(hermes_home)},
                          cwd=hermes_home, timeout=120)
    assert done.returncode == 0, done.stderr
    unreadable(hermes_home)
    with caplog.at_level(logging.WARNING):
        for session in ("s1", "s2", "s-new"):
            assert SECRET not in host.render(session_id=session)
    assert "could not read the persona" in caplog.text and SECRET not in caplog.text


def test_targets_check_and_status_report_the_sections_budget_as_the_plugin_cuts_it(plugged, hermes_home):
    from typer.testing import CliRunner

    from pipeline.cli import app

    runner = CliRunner()
    host = plugged()
    for topic in range(40):
        host.tool("persona_add", {"content": f"Rule {topic}: " + "keep this habit in mind. " * 5,
                                  "topic": f"topic{topic:02d}"})
    before = runner.invoke(app, ["targets", "check", "--json"])
    assert "hermes section" not in before.output  # not installed: nothing to check
    assert runner.invoke(app, ["hermes", "install", "--activate"]).exit_code == 0
    checked = runner.invoke(app, ["targets", "check", "--json"])
    assert checked.exit_code == 0, checked.output
    section = next(c for c in json.loads(checked.output) if c["target"] == "hermes section")
    shown = host.render()
    assert section["outcome"] == "kept" and section["cut"] is False
    assert section["measures"][0] == f"{len(shown):,} of 4,000 characters"
    framed = len(f"## Plugin Context: persona-tier\n<!-- hermes-plugin-section-chars:{len(shown)} -->\n\n") + len(shown)
    assert section["measures"][1].startswith(f"{framed:,} of the 8,000 characters")
    status = runner.invoke(app, ["status"])
    assert f"hermes section: kept ({hermes_home / 'plugins' / 'persona'}; {len(shown):,} of 4,000" in status.output


def add_long_facts(host: Host) -> None:
    for topic in range(40):
        host.tool("persona_add", {"content": f"Rule {topic}: " + "keep this habit in mind. " * 5,
                                  "topic": f"topic{topic:02d}"})


def test_the_section_takes_only_what_the_other_plugins_leave_and_every_section_is_shown(plugged):
    """#49: Hermes shares 8,000 characters among every plugin's sections and skips whole one that would pass them:
    ours, with its own 4,000, would push out a later plugin's. It takes only what the others leave: a plain text
    before ours, a callable after it (called with the session's mapping), and neither one that raises nor one over
    its own max_chars, which Hermes skips too."""
    host = plugged()
    add_long_facts(host)
    alone = host.render()
    host._register_section("aaa-notes", "Notes plugin. " * 150, max_chars=4000)  # 2,100 characters before ours
    host._register_section("zzz-weather", lambda info: f"Weather for {info['session_id']}: " + "sunny. " * 250)
    host._register_section("broken", lambda info: 1 / 0)
    host._register_section("too-long", "x" * 200, max_chars=100)
    crowded = host.render()
    shown = host.prompt_sections()
    assert set(shown) == {"aaa-notes", "persona-tier", "zzz-weather"}  # nothing skipped for want of room
    assert shown["persona-tier"] == crowded and crowded.startswith(HEADER + "\n")
    assert 1000 < len(crowded) < len(alone) <= 4000
    body = crowded[len(HEADER) + 1:]
    for block in body.split("\n\n## ")[1:]:  # cut at section boundaries: every section it keeps is whole
        assert block.startswith("topic") and "keep this habit in mind. " * 4 in block, block
    framed = sum(len(f"## Plugin Context: {id}\n<!-- hermes-plugin-section-chars:{len(text)} -->\n\n") + len(text)
                 for id, text in shown.items()) + 2 * 2 + len(SECTIONS_START) + len(SECTIONS_END) + 2
    assert 8000 - 200 < framed <= 8000  # ours took what was left, less than one of its sections (~150 characters)


def test_targets_check_and_status_say_when_other_plugins_crowd_the_section(plugged, hermes_home):
    from typer.testing import CliRunner

    from pipeline.cli import app

    runner = CliRunner()
    host = plugged()
    add_long_facts(host)
    assert runner.invoke(app, ["hermes", "install", "--activate"]).exit_code == 0
    host.render()  # alone: room for its own 4,000
    alone = next(c for c in json.loads(runner.invoke(app, ["targets", "check", "--json"]).output)
                 if c["target"] == "hermes section")
    assert alone["outcome"] == "kept" and len(alone["measures"]) == 2
    host._register_section("aaa-notes", "Notes plugin. " * 280, max_chars=4000)  # 3,920 characters before ours
    shown = host.render()
    checked = runner.invoke(app, ["targets", "check", "--json"])
    section = next(c for c in json.loads(checked.output) if c["target"] == "hermes section")
    assert section["outcome"].startswith("crowded: other plugins' sections leave ours ")
    assert section["cut"] is True
    others = len("## Plugin Context: aaa-notes\n<!-- hermes-plugin-section-chars:3919 -->\n\n") + 3919 + 2
    assert section["measures"][2].startswith(f"other plugins' sections take {others:,} of them, leaving ours ")
    room = int(section["measures"][2].rsplit(" ", 1)[1].replace(",", ""))
    assert len(shown) <= room < 4000
    status = runner.invoke(app, ["status"])
    assert "hermes section: crowded: other plugins' sections leave ours" in status.output
