"""Forgetting by identity, not by text: after `persona forget` no spelling of the fact survives anywhere we keep it,
every version of it goes, and no way in takes it back unless the user forces it. Both backends.

The secret's text is one that each shipped template escapes differently (JSON, XML), and one target renders it
through a user template with filters; what was rendered from it is found by the generation it was born in.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from pipeline import ForgottenError, PersonaStore, load_settings, tick
from pipeline.cli import app
from pipeline.inject.sessions import SessionSnapshots
from pipeline.inject.views import Reader
from pipeline.integrations.tools import PersonaTools, call_json
from pipeline.interchange.export import export_facts
from pipeline.interchange.facts_file import import_facts
from pipeline.render.sanitize import xml
from pipeline.schedule.forget import forget
from pipeline.store.erasure import FACT_TEXT

runner = CliRunner()
SECRET = 'Drinks "Quetzal" tea & <honey>'
KEPT = "Answers tersely."
BOB = "Bob plays the cello."
TEMPLATES = {"markdown": "persona.md.j2", "xml": "persona.xml.j2", "text": "persona.txt.j2",
             "jsonl": "persona.jsonl.j2", "mine": "filtered.j2"}
# A user's template: its filters spell the text in a way no search for the text's own spellings would find.
FILTERED = ("{% macro truncation_note() %}(cut){% endmacro %}"
            "{% for section in persona.sections %}## {{ section.topic }}\n{% for item in section.items %}"
            "- {{ item.text | upper | replace(' ', '_') }}\n{% endfor %}{% endfor %}")


def spellings(text: str) -> set[str]:
    """Every way the secret can stand in a byte we keep: as written, escaped for XML and JSON, and filtered."""
    return {text, xml(text), json.dumps(text)[1:-1], text.upper().replace(" ", "_"), "Quetzal", "QUETZAL"}


def configured(database, tmp_path: Path, injected: str = "markdown") -> object:
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "filtered.j2").write_text(FILTERED)
    overrides = {**database.settings(), "injection.file": str(tmp_path / "persona-{profile}.md"),
                 "render.template_dirs": [str(tmp_path / "templates")], "injection.target": injected,
                 "injection.enabled": True, "injection.mode": "session",
                 "targets.block.output": "store", "targets.region.output": "region",
                 "targets.region.path": str(tmp_path / "CLAUDE-{profile}.md")}
    for name, template in TEMPLATES.items():
        overrides[f"targets.{name}.template"] = template
        if name != "markdown":
            overrides[f"targets.{name}.path"] = str(tmp_path / f"{name}-{{profile}}.out")
    return load_settings(overrides=overrides)


def seed(database, tmp_path: Path) -> int:
    """Alice's secret and a kept fact, Bob's fact; every target rendered; a session of every target."""
    for who in ("alice", "bob"):
        (tmp_path / f"CLAUDE-{who}.md").write_text("# My own rules\n\n- Never force-push.\n")
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        secret = alice.add(SECRET, topic="drinks").fact.id
        alice.add(KEPT, topic="style")
    with PersonaStore.from_settings(settings, profile="bob") as bob:
        bob.add(BOB, topic="music")
    for who in ("alice", "bob"):
        for target in ("markdown", "block", *TEMPLATES):
            session_settings = configured(database, tmp_path, injected=target)
            store = PersonaStore.from_settings(session_settings, profile=who)
            tick(session_settings, store=store, force=True)
            with SessionSnapshots(session_settings, store=store) as snapshots:
                snapshots.snapshot(f"session-{target}")
        # An agent in a project: its view of the injected target is a block, and its session's snapshot.
        with SessionSnapshots(settings, store=PersonaStore.from_settings(settings, profile=who),
                              reader=Reader("claude-code", "github.com/me/a")) as snapshots:
            assert snapshots.target.name.startswith("@")
            snapshots.snapshot("session-in-a-project")
    return secret


def everything_kept(database, tmp_path: Path) -> str:
    """Every row of every table, and (SQLite) every byte of the database, its -wal and every file we wrote."""
    if database.is_postgres:
        tables = [row[0] for row in database.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")]
    else:
        with closing(sqlite3.connect(database.target)) as conn:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    rows = json.dumps({table: database.rows(table) for table in tables}, default=str, ensure_ascii=False)
    files = b"".join(path.read_bytes() for path in sorted(tmp_path.rglob("*"))
                     if path.is_file() and path.parent.name != "templates")
    return rows + files.decode("utf-8", "replace")


def test_after_a_forget_no_spelling_of_the_fact_is_in_any_byte_we_keep(database, tmp_path):
    secret = seed(database, tmp_path)
    before = everything_kept(database, tmp_path)
    assert all(spelling in before for spelling in spellings(SECRET)), "each template spells it its own way"
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        done = forget(settings, alice, secret)
    assert done.still_holding == [] and done.erasure.snapshots >= len(TEMPLATES) + 1
    after = everything_kept(database, tmp_path)
    assert [spelling for spelling in spellings(SECRET) if spelling in after] == []
    assert KEPT in after and BOB in after and "Never force-push." in after  # the rest, and the user's own text
    for target in TEMPLATES:  # a session of any template takes the persona as it is now
        session_settings = configured(database, tmp_path, injected=target)
        with SessionSnapshots(session_settings, store=PersonaStore.from_settings(session_settings,
                                                                                 profile="alice")) as snapshots:
            text = snapshots.snapshot(f"session-{target}").text
        assert "QUETZAL" not in text.upper() and ("TERSELY" in text.upper())


def test_every_way_in_refuses_the_forgotten_text_unless_forced(database, tmp_path):
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        secret = alice.add(SECRET, topic="drinks").fact.id
        other = alice.add(KEPT, topic="style").fact.id
        exported = tmp_path / "before.yaml"
        exported.write_text(export_facts(alice))
        forget(settings, alice, secret)

        with pytest.raises(ForgottenError, match="was forgotten"):
            alice.add(SECRET.lower(), topic="anything")  # case and spacing do not make it new
        with pytest.raises(ForgottenError):
            alice.replace(other, SECRET)
        for name, text in [("by_text", f"- topic: drinks\n  content: '{SECRET}'\n- topic: new\n  content: Fresh.\n"),
                           ("old_export", exported.read_text()),
                           ("edited_id", f"- id: {other}\n  topic: style\n  content: '{SECRET}'\n")]:
            path = tmp_path / f"{name}.yaml"
            path.write_text(text)
            report = import_facts(alice, path)  # skipped by its place, the rest imported
            assert report.skipped_forgotten == ["fact #1"] and report.refused == [], name
            assert SECRET not in json.dumps(report.to_dict(), default=str), name
        assert sorted(fact.content for fact in alice.list()) == sorted([KEPT, "Fresh."])  # the secret stays out

        tools = PersonaTools(lambda: settings).catalog(legacy=False)
        bound = {"profile": "alice", "session": None}
        for name, args in [("persona_add", {"content": SECRET, "topic": "drinks"}),
                           ("persona_replace", {"persona_id": other, "content": SECRET})]:
            answer = json.loads(call_json(tools, name, args, bound))
            assert answer["status"] == "error" and "forgotten" in answer["error"], name
        database.add_memory("m-secret", SECRET, source="preference", importance=0.9, session="alice")
        with pytest.raises(ForgottenError):
            alice.promote("m-secret")
        assert json.loads(call_json(tools, "persona_promote", {"memory_id": "m-secret"}, bound))["status"] == "error"
        candidates = load_settings(overrides={**database.settings(), "injection.file": str(tmp_path / "c.md"),
                                              "store.profile": "alice",
                                              "pipeline": [{"extract": {"candidates": True}}, "rank", "render",
                                                           "cap", "write"]})
        tick(candidates, store=alice, force=True)
        assert "Quetzal" not in (tmp_path / "c.md").read_text()  # never proposed again

        assert alice.replace(other, SECRET, force=True).new.content == SECRET  # the user, on purpose
    with PersonaStore.from_settings(settings, profile="bob") as bob:
        assert bob.add(SECRET, topic="drinks").created  # bob never forgot it


def test_text_another_tool_writes_again_is_never_rendered_and_is_named(database, tmp_path, caplog):
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        forget(settings, alice, alice.add(SECRET, topic="drinks").fact.id)
        alice.add(KEPT, topic="style")
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES ('alice', "
                     "'permanent', 'drinks', ?)", (SECRET,))
    [(again,)] = database.execute("SELECT id FROM memoria_persona WHERE content = ?", (SECRET,))
    with caplog.at_level("WARNING"), PersonaStore.from_settings(settings, profile="alice") as alice:
        tick(settings, store=alice)
        forgotten_again = [r.getMessage() for r in caplog.records if "another tool wrote it again" in r.getMessage()]
        assert forgotten_again and f"#{again}" in forgotten_again[0] and "Quetzal" not in forgotten_again[0]
        assert "Quetzal" not in (tmp_path / "persona-alice.md").read_text()
        forget(settings, alice, again)
    assert not database.execute("SELECT id FROM memoria_persona WHERE content = ?", (SECRET,))


def test_every_version_can_be_forgotten_by_its_own_id_and_the_output_names_each(database, tmp_path):
    settings = configured(database, tmp_path)
    base = _cli_settings(database, tmp_path)
    as_alice = ["-p", "alice"]
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        berlin = alice.add("Lives in Berlin.", topic="home").fact.id
        munich = alice.replace(berlin, "Lives in Munich.").new.id
        demoted = alice.add("Drinks tea.", topic="drinks").fact.id
        alice.demote(demoted)
        twin = alice.add("Drinks tea.", topic="evenings", force=True).fact.id  # the same text, another topic
    shown = runner.invoke(app, [*base, "forget", str(berlin), *as_alice])  # a superseded version: its whole chain goes
    assert shown.exit_code == 0, shown.stderr
    assert f"#{berlin} (superseded), #{munich} (current)" in shown.stdout
    # Nothing is left to bring back; then a demoted fact, by its own id.
    assert runner.invoke(app, [*base, "undo-replace", str(munich), *as_alice]).exit_code == 1
    tea = json.loads(runner.invoke(app, [*base, "forget", str(demoted), "--json", *as_alice]).stdout)
    assert {(v["id"], v["kind"]) for v in tea["versions"]} >= {(twin, "current")}
    assert [v["kind"] for v in tea["versions"]].count("tombstone") == 1 and tea["still_holding"] == []
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        assert alice.list() == []
        assert alice.add("Walks daily.", topic="habits").created
        alice.demote(alice.list()[0].id)
    [(tombstone,)] = database.execute("SELECT id FROM memoria_preferences WHERE preference LIKE '%Walks daily.'")
    by_tombstone = runner.invoke(app, [*base, "forget", "--tombstone", str(tombstone), *as_alice])
    assert by_tombstone.exit_code == 0 and f"tombstone {tombstone}" in by_tombstone.stdout
    missing = runner.invoke(app, [*base, "forget", "999", *as_alice])
    assert missing.exit_code == 1 and "no persona fact with id 999" in missing.stderr


def test_a_fact_mnemosyne_itself_demoted_can_be_forgotten_by_its_id(tmp_path):
    from hermes_memory_provider.persona_adapter import PersonaAdapter

    db = tmp_path / "mnemosyne.db"
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(tmp_path / "p.md")})
    with PersonaStore.from_settings(settings) as store:
        fact = store.add(SECRET, topic="drinks").fact.id
    with closing(sqlite3.connect(db, isolation_level=None)) as conn:
        adapter = PersonaAdapter(beam_instance=SimpleNamespace(conn=conn))
        assert json.loads(adapter.handle_tool_call("mnemosyne_persona_demote", {"persona_id": fact}))["status"] == "ok"
    with PersonaStore.from_settings(settings) as store:
        done = forget(settings, store, fact)
    assert [version.kind for version in done.erasure.versions] == ["tombstone"]
    assert b"Quetzal" not in b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())


def test_a_scrub_a_reader_held_up_is_named_and_finished_by_persona_scrub(tmp_path):
    db = tmp_path / "m.db"
    base = ["--db", str(db), "--set", f"injection.file={tmp_path / 'p.md'}"]
    fact = json.loads(runner.invoke(app, [*base, "add", SECRET, "--topic", "drinks", "--json"]).stdout)
    runner.invoke(app, [*base, "render"])
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM memoria_persona").fetchone()  # a host's open read keeps the log in place
    held = runner.invoke(app, [*base, "forget", str(fact["fact"]["id"])])
    assert held.exit_code == 0 and "run `persona scrub` once it is idle" in held.stderr
    busy = runner.invoke(app, [*base, "scrub"])
    assert busy.exit_code == 1 and "persona scrub" in busy.stderr
    reader.execute("COMMIT")
    reader.close()
    done = runner.invoke(app, [*base, "scrub"])
    assert done.exit_code == 0, done.stderr
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name.startswith("m.db"))
    assert b"Quetzal" not in raw


def test_the_columns_that_hold_fact_text_are_exactly_the_ones_the_erasure_knows(database, tmp_path):
    """A new table that keeps a fact's text cannot be missed: every column holding it after every feature has run
    is in FACT_TEXT, and after the forget none holds it."""
    secret = seed(database, tmp_path)
    settings = configured(database, tmp_path)
    with PersonaStore.from_settings(settings, profile="alice") as alice:
        older = alice.add("Drinks Quetzal coffee.", topic="drinks").fact.id
        newer = alice.replace(older, "Drinks coffee.").new.id  # a superseded version holds it now
        walks = alice.add("Quetzal walks.", topic="habits").fact.id
        alice.demote(walks)  # a tombstone holds it
        columns = _columns_holding(database, "Quetzal")
        assert columns and set(columns) <= set(FACT_TEXT), set(columns) - set(FACT_TEXT)
        for fact_id in (secret, newer, walks):
            forget(settings, alice, fact_id)
    assert _columns_holding(database, "Quetzal") == []


def _columns_holding(database, needle: str) -> list[tuple[str, str]]:
    if database.is_postgres:
        columns = database.execute("SELECT table_name, column_name FROM information_schema.columns WHERE "
                                   "table_schema = current_schema() AND data_type = 'text'")
    else:
        with closing(sqlite3.connect(database.target)) as conn:
            tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            columns = [(table, row[1]) for table in tables for row in conn.execute(f"PRAGMA table_info({table})")]
    found = []
    for table, column in columns:
        if database.execute(f"SELECT 1 FROM {table} WHERE CAST({column} AS TEXT) LIKE ? LIMIT 1", (f"%{needle}%",)):
            found.append((table, column))
    return sorted(found)


def _cli_settings(database, tmp_path: Path) -> list[str]:
    pairs = [f"{key}={value}" for key, value in database.settings().items()]
    pairs.append(f"injection.file={tmp_path / 'persona-{profile}.md'}")
    return [part for pair in pairs for part in ("--set", pair)]
