"""Every default once (issue 37): a fact's defaults come from pipeline.defaults, on every way in; the tables' DDL
agrees with it; and no bare default confidence is left anywhere else in the package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pipeline
from pipeline import PersonaStore, run_pipeline
from pipeline.cli import app
from pipeline.defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER, DEFAULT_TOPIC
from pipeline.integrations.tool_calls import openai_schema
from pipeline.integrations.tools import PersonaTools

from ..conftest import local_settings
from ..support.databases import Db

PACKAGE = Path(pipeline.__file__).parent
# The constant's own module, and the DDL, which keeps the seed's DEFAULT 0.7 (checked against the constant below).
ALLOWED = {PACKAGE / "defaults.py", PACKAGE / "store" / "sqlite" / "schema.py",
           PACKAGE / "store" / "postgres" / "schema.py"}
BARE = re.compile(r"(?<![\d.])0\.7(?![\d])")


def test_the_tables_default_confidence_is_the_constant(store: PersonaStore, database: Db) -> None:
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES (?, ?, ?, ?)",
                     (store.profile, "long_term", "style", "Uses tabs."))
    assert database.execute("SELECT confidence FROM memoria_persona") == [(DEFAULT_CONFIDENCE,)]


def test_a_fact_given_nothing_takes_the_defaults(store: PersonaStore) -> None:
    fact = store.add("Uses tabs.", topic="style").fact
    assert (fact.tier, fact.confidence) == (DEFAULT_TIER, DEFAULT_CONFIDENCE)


def test_a_promoted_memory_with_no_topic_takes_the_defaults(store: PersonaStore, database: Db) -> None:
    database.add_memory("m1", "Prefers short answers.")
    fact = store.promote("m1").fact
    assert (fact.tier, fact.topic, fact.confidence) == (DEFAULT_TIER, DEFAULT_TOPIC, DEFAULT_CONFIDENCE)


def test_a_row_left_with_no_confidence_is_read_at_the_default(tmp_path: Path, database: Db) -> None:
    with database.store(reinforce_step=0.1) as store:
        kept = store.add("Never force-push.", topic="git").fact
        again = store.add("Writes tests first.", topic="code").fact
    database.execute("UPDATE memoria_persona SET confidence = NULL")
    settings = local_settings(tmp_path, {**database.settings(), "injection.file": str(tmp_path / "persona.md")})
    with database.store(reinforce_step=0.1) as store:
        run_pipeline(settings, store=store)  # a NULL confidence is no broken row: the fact renders
        assert "Never force-push." in (tmp_path / "persona.md").read_text(encoding="utf-8")
        assert store.reinforce(again.id).confidence == pytest.approx(DEFAULT_CONFIDENCE + 0.1)
        assert store.get(kept.id).confidence is None


def test_the_cli_and_the_tools_give_the_same_defaults(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    db = str(settings.store.path)
    assert CliRunner().invoke(app, ["--db", db, "add", "Uses tabs.", "--topic", "style"]).exit_code == 0
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    offered = openai_schema(tools["persona_add"])["parameters"]["properties"]
    assert (offered["tier"]["default"], offered["confidence"]["default"]) == (DEFAULT_TIER, DEFAULT_CONFIDENCE)
    tools["persona_add"](content="Never force-push.", topic="git")
    with PersonaStore(db) as store:
        assert {(f.tier, f.confidence) for f in store.list()} == {(DEFAULT_TIER, DEFAULT_CONFIDENCE)}
        assert len(store.list()) == 2


def test_no_bare_default_confidence_outside_the_constant_and_the_ddl() -> None:
    found = [f"{path.relative_to(PACKAGE)}: {text!r}" for path in sorted(PACKAGE.rglob("*.py")) if path not in ALLOWED
             for text in _literals(path)]
    found += [str(path.relative_to(PACKAGE)) for path in sorted(PACKAGE.rglob("*.j2"))
              if BARE.search(path.read_text(encoding="utf-8"))]
    assert found == []


def test_the_ddl_says_the_constant() -> None:
    for path in sorted(ALLOWED - {PACKAGE / "defaults.py"}):
        assert re.findall(r"confidence \w+(?: \w+)? DEFAULT ([\d.]+)", path.read_text(encoding="utf-8")) == [
            str(DEFAULT_CONFIDENCE)], path


def _literals(path: Path) -> list[object]:
    """Every number 0.7, and every string holding one, in code (docstrings, which describe, are not code)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and (body := node.body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in docstrings
            and (node.value == 0.7 if isinstance(node.value, float) else
                 isinstance(node.value, str) and BARE.search(node.value) is not None)]
