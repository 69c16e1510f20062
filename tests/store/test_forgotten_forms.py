"""Forgotten text stays out in every spelling (issue 41 point 1): other case and spacing, a dropped full stop, a
non-breaking hyphen, full-width digits, a zero-width space, NFD, on every way in: the CLI, the tools, an import.

A forget kept only the folded text's hash (case and spacing); it now keeps the normal form's too, and a forget made
before that, with the folded hash alone, still refuses what it refused.
"""

from __future__ import annotations

import json
import unicodedata

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json
from pipeline.store.forgotten import digests, record, secret

PIN = "Bank PIN is 8642-Zebra."
CAFE = "Café Zürich PIN 1234."
VARIANTS = {
    "other case and spacing": "bank  PIN is 8642-ZEBRA.",
    "the full stop dropped": "Bank PIN is 8642-Zebra",
    "a non-breaking hyphen (U+2011)": "Bank PIN is 8642\u2011Zebra.",
    "full-width digits": "Bank PIN is \uff18\uff16\uff14\uff12-Zebra.",
    "a zero-width space inside": "Bank PIN is 86\u200b42-Zebra.",
}
runner = CliRunner()


def persona(db, *args: str):
    return runner.invoke(app, ["--db", str(db), "--set", f"injection.file={db.parent / 'p.md'}", *args])


@pytest.fixture
def forgotten(tmp_path):
    db = tmp_path / "m.db"
    for text in (PIN, CAFE):
        assert persona(db, "add", text, "--topic", "bank").exit_code == 0
    for fact in PersonaStore(db).list():
        assert persona(db, "forget", str(fact.id)).exit_code == 0
    return db


@pytest.mark.parametrize("text", [*VARIANTS.values(), unicodedata.normalize("NFD", CAFE)], ids=[*VARIANTS, "NFD"])
def test_the_cli_refuses_a_forgotten_fact_in_another_spelling_until_forced(forgotten, text):
    refused = persona(forgotten, "add", text, "--topic", "money")  # another topic: the text itself is refused
    assert refused.exit_code == 1 and "forgotten" in refused.stderr
    assert PersonaStore(forgotten).list() == []
    assert persona(forgotten, "add", text, "--topic", "money", "--force").exit_code == 0


def test_the_tools_and_an_import_refuse_the_other_spellings_too(forgotten, tmp_path):
    settings = load_settings(overrides={"store.path": str(forgotten), "injection.file": str(tmp_path / "p.md")})
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    for text in VARIANTS.values():
        answer = json.loads(call_json(tools, "persona_add", {"content": text, "topic": "money"},
                                      {"profile": None, "session": None}))
        assert answer["status"] == "error" and "forgotten" in answer["error"], text
    pasted = tmp_path / "memory.txt"
    pasted.write_text("".join(f"- {text}\n" for text in VARIANTS.values()) + "- Answers tersely.\n", encoding="utf-8")
    imported = persona(forgotten, "import", str(pasted), "--from", "lines", "--topic", "money")
    assert imported.exit_code == 0, imported.stderr
    # The variants are one entry to the import (one normal form), skipped once as forgotten.
    assert "1 forgotten fact skipped" in imported.output
    assert [fact.content for fact in PersonaStore(forgotten).list()] == ["Answers tersely."]


def test_a_forget_from_before_the_normal_form_still_refuses_what_it_refused(tmp_path):
    """Such a forget left the folded text's hash alone: the same text in other case and spacing stays out."""
    with PersonaStore(tmp_path / "m.db") as store, store.transaction() as conn:
        record(store, conn, digests(secret(store, conn), texts=[PIN]))
    refused = persona(tmp_path / "m.db", "add", VARIANTS["other case and spacing"], "--topic", "money")
    assert refused.exit_code == 1 and "forgotten" in refused.stderr


def test_a_forget_from_before_the_fact_form_still_refuses_the_text_re_spelled(tmp_path):
    """Such a forget left the folded and the normal forms' hashes (issue 48 point 5 added the fact form's): the
    text re-spelled stays out; re-dressed it cannot be found, its text being gone, and the docs say so."""
    import hmac

    from pipeline.text import normal_form

    with PersonaStore(tmp_path / "m.db") as store, store.transaction() as conn:
        key = secret(store, conn)
        normal = hmac.digest(key, f"normal\x00{normal_form(PIN)}".encode(), "sha256").hex()
        record(store, conn, [*digests(key, texts=[PIN]), normal])
    for text in VARIANTS.values():
        refused = persona(tmp_path / "m.db", "add", text, "--topic", "money")
        assert refused.exit_code == 1 and "forgotten" in refused.stderr, text
    assert persona(tmp_path / "m.db", "add", f"**{PIN}**", "--topic", "money").exit_code == 0
