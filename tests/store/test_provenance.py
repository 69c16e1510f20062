"""Every fact says who wrote it, stamped by persona-tier's own code (never by a model): the CLI, the Python API, a
promote, an import, a host's tool, and another tool writing Mnemosyne's table directly. Both backends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings, run_pipeline
from pipeline.cli import app
from pipeline.integrations.hermes_binding import BoundTools
from pipeline.interchange.export import export_facts
from pipeline.interchange.facts_file import import_facts

from ..conftest import REPO, write

runner = CliRunner()


def cli(database, tmp_path: Path, *args: str):
    pairs = [f"{key}={value}" for key, value in database.settings().items()]
    pairs.append(f"injection.file={tmp_path / 'persona.md'}")
    return runner.invoke(app, [*(part for pair in pairs for part in ("--set", pair)), *args])


def writers(database) -> dict[str, str]:
    with PersonaStore(database.target) as store:
        return {fact.content: fact.writer or "" for fact in store.list()}


def test_each_writer_is_named_in_list_explain_history_and_json(database, tmp_path):
    assert cli(database, tmp_path, "add", "From the CLI.", "--topic", "a").exit_code == 0
    with PersonaStore(database.target) as store:
        store.add("From Python.", topic="a")
    database.add_memory("m1", "A promoted memory.")
    assert cli(database, tmp_path, "promote", "m1").exit_code == 0
    facts = write(tmp_path / "facts.yaml", "- topic: a\n  content: From a file.\n")
    with PersonaStore(database.target) as store:
        import_facts(store, facts)
    settings = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "persona.md")})
    tools = BoundTools(settings, legacy_names=False, writes=True)
    answer = json.loads(tools.call("persona_add", {"content": "From Hermes.", "topic": "a"}, session_id="s"))
    assert answer["fact"]["writer"] == "tool:hermes"  # the model sees who wrote it, and cannot say otherwise
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES ('default', "
                     "'long_term', 'a', 'From another tool.')")

    assert writers(database) == {"From the CLI.": "cli", "From Python.": "api", "A promoted memory.": "promote:m1",
                                 "From a file.": f"import:facts:{facts}", "From Hermes.": "tool:hermes",
                                 "From another tool.": "another tool"}
    listed = cli(database, tmp_path, "list")
    assert listed.stdout.splitlines()[0].split()[6] == "WRITER" and "promote:m1" in listed.stdout
    explained = json.loads(cli(database, tmp_path, "explain", "--json").stdout)
    assert {fact["content"]: fact["writer"] for fact in explained[0]["facts"]}["From another tool."] == \
        "another tool"
    newest = json.loads(cli(database, tmp_path, "list", "--json").stdout)
    cli_id = next(fact["id"] for fact in newest if fact["content"] == "From the CLI.")
    replaced = json.loads(cli(database, tmp_path, "replace", str(cli_id), "Corrected by hand.", "--json").stdout)
    history = json.loads(cli(database, tmp_path, "history", str(replaced["new"]["id"]), "--json").stdout)
    assert [(link["content"], link["writer"]) for link in history] == [("From the CLI.", "cli"),
                                                                       ("Corrected by hand.", "cli")]


def test_the_writer_survives_export_and_re_import_into_another_database(database, tmp_path):
    database.store().open()
    database.add_memory("m1", "A promoted memory.")
    with PersonaStore(database.target) as store:
        store.promote("m1")
        store.add("From Python.", topic="a")
        exported = write(tmp_path / "export.yaml", export_facts(store))
    assert "writer: promote:m1" in exported.read_text()
    with PersonaStore(tmp_path / "other.db") as other:
        import_facts(other, exported)
        assert {fact.content: fact.writer for fact in other.list()} == {"A promoted memory.": "promote:m1",
                                                                        "From Python.": "api"}


def test_a_fact_from_before_births_were_kept_says_unknown(tmp_path):
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        store.add("Old fact.", topic="a")
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM persona_births")
    with PersonaStore(db) as store:
        assert [fact.writer for fact in store.list()] == ["unknown"]


@pytest.mark.anyio
async def test_an_mcp_clients_write_is_stamped_with_its_own_name(tmp_path):
    from mcp import Client, StdioServerParameters
    from mcp_types import Implementation

    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"),
                                        "injection.file": str(tmp_path / "persona.md")})
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           "MNEMOSYNE_PERSONA_STORE__PATH": str(tmp_path / "m.db"),
           "MNEMOSYNE_PERSONA_FILE": str(tmp_path / "persona.md")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env)
    async with Client(params, client_info=Implementation(name="claude-code", version="2.1")) as client:
        result = await client.call_tool("persona_add", {"content": "Said over MCP.", "topic": "a"})
    assert result.structured_content["fact"]["writer"] == "tool:claude-code"
    with PersonaStore.from_settings(settings) as store:
        assert [fact.writer for fact in store.list()] == ["tool:claude-code"]
