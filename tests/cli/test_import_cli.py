"""`persona import --from FORMAT PATH`: standard input, a dry run that shows every entry's fate and writes nothing,
refusals named one per line, --skip-bad, the size bound, and one clear line for every bad input."""

from __future__ import annotations

import json

import pytest

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, digest, runner, write

DATA = REPO / "tests" / "data" / "imports"


def persona(database, tmp_path, *args: str, stdin: str | None = None):
    pairs = [f"{key}={value}" for key, value in database.settings().items()]
    pairs.append(f"injection.file={tmp_path / 'persona.md'}")
    return runner.invoke(app, [*(part for pair in pairs for part in ("--set", pair)), *args], input=stdin)


def facts(database) -> dict[str, str]:
    with PersonaStore(database.target) as store:
        return {fact.content: fact.writer or "" for fact in store.list()}


def test_a_list_pasted_on_standard_input_is_imported_once(database, tmp_path):
    pasted = "Is a vegetarian.\n- Prefers metric units.\n"
    done = persona(database, tmp_path, "import", "--from", "lines", "-", "--topic", "chatgpt", stdin=pasted)
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("<stdin>: 2 added, 0 updated, 0 unchanged")
    assert facts(database) == dict.fromkeys(["Is a vegetarian.", "Prefers metric units."], "import:lines:<stdin>")
    again = persona(database, tmp_path, "import", "--from", "lines", "-", "--topic", "chatgpt", stdin=pasted)
    assert again.stdout.startswith("<stdin>: 0 added, 0 updated, 2 unchanged")


def test_the_dry_run_lists_what_it_would_add_what_is_there_and_what_is_refused_and_writes_nothing(database, tmp_path):
    assert persona(database, tmp_path, "add", "Is a vegetarian.", "--topic", "food").exit_code == 0
    demoted = json.loads(persona(database, tmp_path, "add", "Has a dog named Pixel.", "--topic", "pets",
                                 "--json").stdout)
    assert persona(database, tmp_path, "demote", str(demoted["fact"]["id"])).exit_code == 0
    before = facts(database)
    seen = digest(database.target) if not database.is_postgres else None
    source = DATA / "pasted" / "chatgpt-memories.txt"
    done = persona(database, tmp_path, "import", "--from", "lines", str(source), "--dry-run")
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines()[0] == f"{source} (lines), dry run: nothing was written"
    assert "would add (2)" in done.stdout and "already there (1)" in done.stdout
    assert "line 2      general  long_term  Prefers metric units." in done.stdout
    assert "refused (1)\nline 3: that fact was demoted; pass --force to take it in again" in done.stdout
    assert facts(database) == before and (seen is None or digest(database.target) == seen)


def test_a_refusal_writes_nothing_and_skip_bad_imports_the_rest_naming_what_it_left(database, tmp_path):
    source = write(tmp_path / "GEMINI.md", "## Style\n\n- Short answers.\n- " + "y" * 2001 + "\n")
    refused = persona(database, tmp_path, "import", "--from", "instructions", str(source))
    assert refused.exit_code == 1 and facts(database) == {}
    assert refused.stderr.strip() == (f"error: {source}: line 4: content is 2001 characters; the limit is 2000 "
                                      "(store.max_fact_chars); nothing was imported (--skip-bad imports the rest)")
    skipped = persona(database, tmp_path, "import", "--from", "instructions", str(source), "--skip-bad")
    assert skipped.exit_code == 0 and list(facts(database)) == ["Short answers."]
    assert "refused line 4: content is 2001 characters" in skipped.stdout


def test_hermes_memory_notes_are_listed_and_accepted_only_on_request(database, tmp_path):
    source = DATA / "hermes" / "memories" / "MEMORY.md"
    listed = persona(database, tmp_path, "import", "--from", "hermes", str(source))
    assert listed.exit_code == 0 and facts(database) == {}
    assert "3 notes offered for review, not imported" in listed.stdout and "--accept-notes" in listed.stdout
    taken = persona(database, tmp_path, "import", "--from", "hermes", str(source), "--accept-notes", "--json")
    assert len(json.loads(taken.stdout)["added"]) == 3


def test_the_facts_format_is_the_default_and_the_json_names_format_and_entries(database, tmp_path):
    source = write(tmp_path / "f.yaml", "- {topic: style, content: Answers tersely.}\n")
    report = json.loads(persona(database, tmp_path, "import", str(source), "--json").stdout)
    assert report["format"] == "facts" and report["entries"][0]["where"] == "fact #1"
    assert report["entries"][0]["outcome"] == "add" and report["refused"] == []


@pytest.mark.parametrize(("args", "message"), [
    (["--from", "chatgpt"], "unknown import format 'chatgpt'; known: assistant, facts, hermes, instructions, "
                            "lines, mem0, persona-md"),
    (["--from", "lines", "missing.txt"], "missing.txt: cannot read (it does not exist)"),
])
def test_a_bad_format_or_path_is_one_clear_line(tmp_path, args, message):
    path = [] if len(args) == 3 else [str(tmp_path / "x.txt")]
    write(tmp_path / "x.txt", "x\n")
    done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "import", *args, *path])
    assert done.exit_code == 1 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_input_past_the_bound_and_bytes_that_are_not_utf8_are_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr("pipeline.interchange.formats.source.MAX_IMPORT_BYTES", 1024 * 1024)
    big = write(tmp_path / "big.txt", "x" * (1024 * 1024 + 1))
    done = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "import", "--from", "lines", str(big)])
    assert done.exit_code == 1
    assert done.stderr.strip() == f"error: {big} is larger than 1 MiB, the most an import reads; split it into " \
        "smaller files"
    piped = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "import", "--from", "lines", "-"],
                          input="y" * (1024 * 1024 + 1))
    assert piped.exit_code == 1 and "<stdin> is larger than 1 MiB" in piped.stderr
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Café\n".encode("latin-1"))
    bad = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "import", "--from", "lines", str(latin)])
    assert bad.exit_code == 1 and f"{latin}: not UTF-8 text (invalid continuation byte at byte 3)" in bad.stderr


SIX = [f"Prefers variant {n} of the build flags." for n in range(1, 7)]
CAPPED_SOURCES = {  # six entries in each format
    "mem0": ("memories.json", json.dumps({"results": [{"id": f"m{n}", "memory": text} for n, text in enumerate(SIX)]})),
    "lines": ("pasted.txt", "".join(f"- {text}\n" for text in SIX)),
    "facts": ("facts.yaml", "".join(f"- {{topic: build, content: {text}}}\n" for text in SIX)),
}


@pytest.mark.parametrize("fmt", sorted(CAPPED_SOURCES))
def test_a_source_holding_more_facts_than_the_cap_is_refused_with_the_figure_and_writes_nothing(tmp_path, fmt):
    name, text = CAPPED_SOURCES[fmt]
    source = write(tmp_path / name, text)
    database = ["--db", str(tmp_path / "m.db")]
    for dry_run in ([], ["--dry-run"]):
        refused = runner.invoke(app, [*database, "--set", "store.max_import_facts=5", "import", "--from", fmt,
                                      str(source), *dry_run])
        assert refused.exit_code == 1
        assert refused.stderr.strip() == (f"error: {source} holds 6 facts; an import takes at most 5 "
                                          "(store.max_import_facts): nothing was imported; split the source, or "
                                          "raise the setting")
    assert json.loads(runner.invoke(app, [*database, "list", "--json"]).stdout) in ([], {"personas": []})
    taken = runner.invoke(app, [*database, "--set", "store.max_import_facts=6", "import", "--from", fmt, str(source)])
    assert taken.exit_code == 0 and taken.stdout.startswith(f"{source}: 6 added"), taken.output


def test_the_python_api_keeps_the_cap_too(tmp_path):
    from pipeline import FactsFileError, import_facts, import_source

    source = write(tmp_path / "facts.yaml", CAPPED_SOURCES["facts"][1])
    with PersonaStore(tmp_path / "m.db", max_import_facts=5) as store:
        for imported in (lambda: import_facts(store, source), lambda: import_source(store, source)):
            with pytest.raises(FactsFileError, match=r"holds 6 facts; an import takes at most 5"):
                imported()
        assert store.list() == []


def test_by_default_a_mem0_export_past_fifty_thousand_memories_is_refused_unread(tmp_path):
    memories = [{"id": f"m{n}", "memory": f"Prefers variant {n}."} for n in range(50_001)]
    source = write(tmp_path / "memories.json", json.dumps({"results": memories}))
    refused = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "import", "--from", "mem0", str(source)])
    assert refused.exit_code == 1
    assert f"{source} holds 50,001 facts; an import takes at most 50,000 (store.max_import_facts)" in refused.stderr
