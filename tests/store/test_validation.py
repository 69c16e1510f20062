"""What the store accepts and what it skips (store/validation.py, the row contract): bad arguments are
typed errors naming the value, and a row another tool wrote that breaks the contract is skipped with one
warning, never fatal, never rendered.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from pipeline import InputError, PersonaError, PersonaStore, load_settings, run_pipeline
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call

from ..conftest import add_memory, cli, failed_cleanly, runner

# -- arguments -------------------------------------------------------------------


def test_nul_bytes_and_huge_facts_are_rejected_clearly(db):
    with PersonaStore(db) as store:
        store.open()  # creates the schema add_memory writes into
        with pytest.raises(InputError, match="content contains a NUL byte"):
            store.add("a\x00b", topic="t")
        with pytest.raises(InputError, match=r"content is 1048576 characters long; the limit is 2000"):
            store.add("x" * (1 << 20), topic="t")
        add_memory(db, "big", "y" * (1 << 20))
        with pytest.raises(InputError, match=r"memory big is 1048576 characters long"):
            store.promote("big")
        assert store.list() == []


def test_errors_stay_typed_at_the_library_boundary(tmp_path):
    with pytest.raises(InputError, match="profile is not valid UTF-8"):
        PersonaStore(tmp_path / "m.db", profile="s\udcff")
    with pytest.raises(InputError, match="invalid persona id"):
        PersonaStore(tmp_path / "m.db").get(2**80)
    with PersonaStore(tmp_path / "m.db") as store, pytest.raises(PersonaError):
        store.add("x", topic="t\udcff")


@pytest.mark.parametrize("number", [str(2**63), str(2**64), str(10**30), "0", "-1"])
def test_ids_sqlite_cannot_hold_are_one_clear_error(tmp_path, seeded, number):
    for command in ("demote", "reinforce"):
        line = failed_cleanly(cli(tmp_path, "--db", "m.db", command, "--", number))
        assert "invalid persona id" in line
    tools = PersonaTools(lambda: load_settings(overrides={"store.path": str(seeded)})).catalog(legacy=True)
    with pytest.raises(InputError):
        call(tools, "mnemosyne_persona_reinforce", {"persona_id": int(number)})


# -- one bad row never stops everything ------------------------------------------


BAD_ROWS = {
    "negative count": "reinforcement_count = -1",
    "text confidence": "confidence = 'very'",
    "confidence above one": "confidence = 7",
    "NULL content": "content = NULL",
    "BLOB content": "content = X'DEADBEEF'",
    "empty content": "content = '   '",
    "whitespace content": "content = char(9, 12288, 10)",
    "6 MB content": "content = '{big}'",
    "BLOB topic": "topic = X'CAFE'",
    "text count": "reinforcement_count = 'many'",
}


@pytest.mark.parametrize("name", sorted(BAD_ROWS))
def test_a_row_that_breaks_the_contract_is_skipped_with_one_warning(tmp_path, name):
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        good = store.add("Keeps answers short.", topic="style").fact
        bad = store.add("Will be broken.", topic="broken").fact
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        if name == "NULL content":  # NOT NULL: rebuild without it, as another tool's schema might be
            conn.execute("UPDATE memoria_persona SET content = '' WHERE id = ?", (bad.id,))
        else:
            conn.execute(f"UPDATE memoria_persona SET {BAD_ROWS[name].format(big='x' * 6_000_000)} WHERE id = ?",
                         (bad.id,))
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(tmp_path / "p.md")})
    said = []
    for args in (["list"], ["status"], ["tick"], ["retention", "--dry-run"], ["render", "--dry-run"]):
        result = runner.invoke(app, ["--db", str(db), "--set", f"injection.file={tmp_path / 'p.md'}", *args])
        assert result.exit_code == 0 and result.exception is None, (args, result.stderr)
        said.append(result.stderr.count(f"skipping persona fact #{bad.id}"))
    assert said[0] == 1 and sum(said) == 1  # named once per process, never fatal
    with PersonaStore.from_settings(settings) as store:
        reports = run_pipeline(settings, store=store, dry_run=True)
        assert [f.id for f in store.list()] == [good.id]
    assert "Keeps answers short." in reports[0].text and "broken" not in reports[0].text
