"""Supersession detection without a model (supersede.detect): the corpus's figures, auto / flag / off through the
store, and hard negatives that must survive. Every test has a second profile."""

from __future__ import annotations

import pytest
from ruamel.yaml import YAML

from pipeline.store.supersede_rules import judge

from ..conftest import REPO

CORPUS = REPO / "tests" / "data" / "supersede_train.yaml"
PAIRS = YAML(typ="safe").load(CORPUS.read_text(encoding="utf-8"))["pairs"]


@pytest.mark.parametrize("old, new", [
    ("Uses npm for JavaScript packaging", "Now uses pnpm for JavaScript packaging"),
    ("Wohnt in Köln", "Ist nach München umgezogen"),
    ("Utilise Docker en local", "N'utilise plus Docker en local"),
    ("Usa npm para paquetes de JavaScript", "Ahora usa pnpm para paquetes de JavaScript"),
])
def test_auto_supersedes_a_signalled_change_in_each_language(database, old, new):
    mine, other = database.store(profile="alice", supersede_detect="auto"), database.store(profile="bob")
    mine.add(old, topic="t")
    other.add(old, topic="t")
    result = mine.add(new, topic="t")
    assert result.superseded and [fact.content for fact in mine.list()] == [new]
    assert mine.history(result.fact.id)[0].how == "detected"
    assert [fact.content for fact in other.list()] == [old]


def test_hard_negatives_all_survive_under_auto(database):
    mine, other = database.store(profile="alice", supersede_detect="auto"), database.store(profile="bob")
    other.add("Bob's own fact", topic="t")
    negatives = [pair for pair in PAIRS if pair["label"] == "keep"]
    lost = []
    for index, pair in enumerate(negatives):
        topic = f"t{index}"
        mine.add(pair["old"], topic=topic)
        mine.add(pair["new"], topic=topic)
        if len(mine.list(topic=topic)) != 2:
            lost.append(pair["old"])
    # The one measured false positive is why the default is flag (see `make bench`); every other survives.
    measured = [pair["old"] for pair in negatives if judge(pair["old"], pair["new"]).proposes]
    assert lost == measured and len(lost) <= 1
    assert mine.add("Uses ruff for Python linting", topic="py").created
    mine.add("Now uses ruff for Python linting", topic="py2")
    assert [fact.content for fact in other.list()] == ["Bob's own fact"]


def test_uv_and_ruff_both_stay_whatever_the_mode(database):
    for mode in ("auto", "flag", "off"):
        mine = database.store(profile=f"alice-{mode}", supersede_detect=mode)
        mine.add("Uses uv for Python packaging", topic="tools")
        result = mine.add("Now uses ruff for Python linting", topic="tools")
        assert not result.superseded and not result.flagged and len(mine.list()) == 2


def test_flag_only_reports_the_pair_in_status_and_off_does_nothing(database, tmp_path):
    import json

    from typer.testing import CliRunner

    from pipeline.cli import app

    flagged = database.store(profile="alice", supersede_detect="flag")
    old = flagged.add("Uses npm for JavaScript packaging", topic="tools").fact
    new = flagged.add("Now uses pnpm for JavaScript packaging", topic="tools")
    assert new.flagged == (old.id,) and not new.superseded and len(flagged.list()) == 2
    off = database.store(profile="bob", supersede_detect="off")
    off.add("Uses npm for JavaScript packaging", topic="tools")
    assert not off.add("Now uses pnpm for JavaScript packaging", topic="tools").flagged and len(off.list()) == 2
    runner = CliRunner()
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    status = runner.invoke(app, [*base, "status", "-p", "alice", "--json"])
    assert json.loads(status.output)["supersede_flags"][0]["old"] == old.id
    assert f"#{new.fact.id} may supersede #{old.id}" in runner.invoke(app, [*base, "status", "-p", "alice"]).output
    assert f"may supersede #{old.id}" in runner.invoke(app, [*base, "explain", "-p", "alice"]).output
    assert json.loads(runner.invoke(app, [*base, "status", "-p", "bob", "--json"]).output)["supersede_flags"] == []
