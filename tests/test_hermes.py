"""The Hermes memory provider, driven by a small host that follows Hermes' documented call order."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.integrations.hermes_provider import PersonaMemoryProvider
from pipeline.store import PersonaStore

from .conftest import write

V1 = "## style\n\n- Answers tersely.\n"
V2 = "## style\n\n- Answers in full sentences.\n"
HEADER = "# L3 Persona (Active Behavioral Rules)\n"


class Host:
    """The part of Hermes' MemoryManager that matters here: prompt caching and compression."""

    def __init__(self, provider: PersonaMemoryProvider, hermes_home: Path, agent_context: str = "primary") -> None:
        self.provider = provider
        self.session_id = "session-1"
        provider.initialize(self.session_id, hermes_home=str(hermes_home), platform="cli",
                            agent_context=agent_context)
        self.prompt = self.build_prompt()

    def build_prompt(self) -> str:
        return "You are Hermes.\n\n" + self.provider.system_prompt_block() + "\n\nTools: shell."

    def turn(self) -> str:
        return self.prompt  # cached: Hermes does not rebuild the prompt between turns

    def compress(self) -> None:
        self.provider.on_pre_compress([{"role": "user", "content": "..."}])
        self.prompt = self.build_prompt()
        old, self.session_id = self.session_id, self.session_id + "+"
        self.provider.on_session_switch(self.session_id, parent_session_id=old, reset=False)


@pytest.fixture
def hermes_home(tmp_path: Path) -> Path:
    home = tmp_path / "hermes"
    write(home / "memory" / "persona.md", V1)
    return home


@pytest.fixture
def provider():
    made = PersonaMemoryProvider()
    yield made
    made.shutdown()


def test_the_documented_call_order(provider, hermes_home):
    assert provider.name == "persona" and provider.is_available()
    host = Host(provider, hermes_home)
    assert host.turn() == "You are Hermes.\n\n" + HEADER + V1 + "\n\nTools: shell."
    names = [schema["name"] for schema in provider.get_tool_schemas()]
    assert "mnemosyne_persona_add" in names and "mnemosyne_persona_session_refresh" in names
    added = json.loads(provider.handle_tool_call("mnemosyne_persona_add", {"content": "Uses uv.", "topic": "tools"}))
    assert added["created"]
    assert host.turn() == host.turn()  # adding a fact does not change the running prompt
    host.compress()  # the file did not change: byte-identical prompt
    assert host.turn() == "You are Hermes.\n\n" + HEADER + V1 + "\n\nTools: shell."


def test_the_block_is_stable_until_a_compaction_and_changes_only_if_the_file_did(provider, hermes_home):
    host = Host(provider, hermes_home)
    first = host.turn()
    write(hermes_home / "memory" / "persona.md", V2)
    assert [host.turn() for _ in range(5)] == [first] * 5
    assert provider.system_prompt_block() == HEADER + V1  # even a rebuild without compaction keeps the voice
    host.compress()
    assert host.turn() == "You are Hermes.\n\n" + HEADER + V2 + "\n\nTools: shell."
    second = host.turn()
    host.compress()
    assert host.turn() == second


def test_the_new_session_inherits_and_reset_starts_afresh(provider, hermes_home):
    host = Host(provider, hermes_home)
    host.compress()
    write(hermes_home / "memory" / "persona.md", V2)
    assert provider.system_prompt_block() == HEADER + V1  # the continuing session keeps its voice
    provider.on_session_switch("brand-new", reset=True)
    assert provider.system_prompt_block() == HEADER + V2


def test_tool_schemas_are_openai_functions(provider, hermes_home):
    Host(provider, hermes_home)
    for schema in provider.get_tool_schemas():
        assert set(schema) == {"name", "description", "parameters"}
        assert schema["parameters"]["type"] == "object" and schema["description"]
    promote = {s["name"]: s for s in provider.get_tool_schemas()}["mnemosyne_persona_promote"]
    assert promote["parameters"]["required"] == ["memory_id"]
    assert promote["parameters"]["properties"]["tier"]["enum"] == ["permanent", "long_term", "working"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("mnemosyne_persona_reinforce", {"persona_id": 42}, "no persona fact with id 42"),
        ("mnemosyne_persona_promote", {"memory_id": "m1", "tier": "forever"}, "invalid arguments"),
        ("mnemosyne_persona_list", {"bogus": 1}, "bogus: extra inputs are not permitted"),
        ("mnemosyne_persona_nope", {}, "unknown tool 'mnemosyne_persona_nope'"),
        ("mnemosyne_persona_list", "{not json", "not valid JSON"),
        ("mnemosyne_persona_list", [1, 2], "arguments must be a JSON object"),
    ],
)
def test_handle_tool_call_never_raises(provider, hermes_home, name, args, message):
    Host(provider, hermes_home)
    result = json.loads(provider.handle_tool_call(name, args))
    assert message in result["error"]


def test_tool_calls_accept_json_strings(provider, hermes_home):
    Host(provider, hermes_home)
    provider.handle_tool_call("mnemosyne_persona_add", json.dumps({"content": "x", "topic": "t"}))
    listed = json.loads(provider.handle_tool_call("mnemosyne_persona_list", "{}"))
    assert [f["content"] for f in listed["facts"]] == ["x"]


def test_a_subagent_does_not_write(provider, hermes_home):
    host = Host(provider, hermes_home, agent_context="subagent")
    assert host.turn() == "You are Hermes.\n\n" + HEADER + V1 + "\n\nTools: shell."
    refused = json.loads(provider.handle_tool_call("mnemosyne_persona_add", {"content": "x", "topic": "t"}))
    assert "only the primary agent" in refused["error"]
    assert "mnemosyne_persona_add" not in [s["name"] for s in provider.get_tool_schemas()]
    with PersonaStore(hermes_home / "mnemosyne" / "data" / "mnemosyne.db") as store:
        assert store.list() == []
        assert store.conn.execute("SELECT COUNT(*) FROM persona_snapshots").fetchone()[0] == 0


def test_uses_hermes_home_for_its_defaults(provider, hermes_home):
    Host(provider, hermes_home)
    assert (hermes_home / "mnemosyne" / "data" / "mnemosyne.db").exists()
    assert provider.backup_paths() == [str(hermes_home / "memory" / "persona.md")]


def test_optional_hooks_accept_anything(provider, hermes_home):
    Host(provider, hermes_home)
    assert provider.prefetch("query", session_id="x") == ""
    for hook in ("queue_prefetch", "sync_turn", "on_turn_start", "on_session_end", "on_memory_write",
                 "on_delegation", "save_config"):
        assert getattr(provider, hook)("a", 1, extra=True) is None


def test_a_broken_database_never_crashes_the_host(tmp_path, monkeypatch):
    home = tmp_path / "hermes"
    write(home / "memory" / "persona.md", V1)
    (tmp_path / "bad.db").write_bytes(b"garbage" * 300)
    monkeypatch.setenv("MNEMOSYNE_PERSONA_STORE__PATH", str(tmp_path / "bad.db"))
    provider = PersonaMemoryProvider()
    host = Host(provider, home)
    assert host.turn() == "You are Hermes.\n\n\n\nTools: shell."  # no block, so no header either
    assert "not a SQLite database" in json.loads(provider.handle_tool_call("mnemosyne_persona_list", {}))["error"]
    host.compress()


# -- the installer ------------------------------------------------------------------

CONFIG = """\
# My Hermes settings
model: claude  # the usual
memory:
  # which external provider
  provider: honcho
"""


def test_install_and_activate_on_a_temporary_hermes_home(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", CONFIG)
    runner = CliRunner()
    result = runner.invoke(app, ["hermes", "install", "--hermes-home", str(home), "--activate"])
    assert result.exit_code == 0, result.stderr
    plugin = home / "plugins" / "persona"
    init = (plugin / "__init__.py").read_text()
    assert "MemoryProvider" in init[:8192] and "def register(ctx)" in init
    assert "name: persona" in (plugin / "plugin.yaml").read_text()
    assert (home / "config.yaml").read_text() == CONFIG.replace("provider: honcho", "provider: persona")
    again = runner.invoke(app, ["hermes", "install", "--hermes-home", str(home), "--activate"])
    assert again.exit_code == 0 and (home / "config.yaml").read_text().count("provider: persona") == 1
    # Hermes' own discovery: import the directory and call register(ctx).
    spec = importlib.util.spec_from_file_location("hermes_plugin_persona", plugin / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    registered = []
    module.register(type("Ctx", (), {"register_memory_provider": lambda self, p: registered.append(p)})())
    assert registered[0].name == "persona"
    removed = runner.invoke(app, ["hermes", "uninstall", "--hermes-home", str(home)])
    assert removed.exit_code == 0 and not plugin.exists()
    assert (home / "config.yaml").read_text() == CONFIG  # reversed exactly, comments and all


def test_uninstall_without_an_earlier_provider_removes_the_selection(tmp_path):
    from ruamel.yaml import YAML

    home = tmp_path / "hh"
    write(home / "config.yaml", "# mine\nmodel: claude  # the usual\n")
    runner = CliRunner()
    runner.invoke(app, ["hermes", "install", "--hermes-home", str(home), "--activate"])
    assert YAML(typ="safe").load((home / "config.yaml").read_text())["memory"] == {"provider": "persona"}
    runner.invoke(app, ["hermes", "uninstall", "--hermes-home", str(home)])
    assert YAML(typ="safe").load((home / "config.yaml").read_text()) == {"model": "claude"}
    assert (home / "config.yaml").read_text().startswith("# mine\nmodel: claude  # the usual\n")


def test_install_uses_hermes_home_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "env-home"))
    assert CliRunner().invoke(app, ["hermes", "install"]).exit_code == 0
    assert (tmp_path / "env-home" / "plugins" / "persona" / "__init__.py").exists()
    assert not (tmp_path / "env-home" / "config.yaml").exists()


def test_the_provider_imports_without_hermes():
    assert "agent" not in sys.modules or not hasattr(sys.modules["agent"], "memory_provider")
    assert PersonaMemoryProvider.__mro__[1] is object
