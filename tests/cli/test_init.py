"""`persona init` on a home holding Hermes, Claude Code, Codex and Gemini CLI files and Mnemosyne's database: the dry
run shows what it would import and which presets it would add and changes no byte anywhere; --yes imports every
source (adopting a hand-written persona.md), adds the presets and renders them, keeping every byte of the user's own
text; a second run adds nothing. Both backends."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, digest, runner
from ..support.databases import MNEMOSYNE_SCHEMA

DATA = REPO / "tests" / "data" / "imports"
MNEMOSYNE_FACT = "Prefers dark mode."
MNEMOSYNE_DB = Path(".hermes/mnemosyne/data/mnemosyne.db")


def populate(home: Path) -> None:
    """A home as a Hermes, Mnemosyne, Claude Code, Codex and Gemini CLI user has it."""
    for relative, source in [(".hermes/memories/USER.md", "hermes/memories/USER.md"),
                             (".hermes/memories/MEMORY.md", "hermes/memories/MEMORY.md"),
                             (".hermes/memory/persona.md", "hand/persona.md"),
                             (".claude/CLAUDE.md", "claude/CLAUDE.md"), (".gemini/GEMINI.md", "gemini/GEMINI.md")]:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / source, home / relative)
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").write_text("## Git\n\n- Never force-push; ask first.\n")
    database = home / MNEMOSYNE_DB
    database.parent.mkdir(parents=True)
    with closing(sqlite3.connect(database)) as conn, conn:  # as Mnemosyne made it, with a fact it promoted
        conn.executescript(MNEMOSYNE_SCHEMA.read_text())
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES ('default', "
                     "'long_term', 'ui', ?)", (MNEMOSYNE_FACT,))


def every_file(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): digest(path) for path in sorted(root.rglob("*")) if path.is_file()}


def store_args(database) -> list[str]:
    """The default store is Mnemosyne's database in the home; the PostgreSQL run names its server instead."""
    return ["--set", f"store.url={database.target}"] if database.is_postgres else []


def held(database, home: Path) -> dict[str, str]:
    return held_at(database.target if database.is_postgres else home / MNEMOSYNE_DB)


def held_at(target: Path | str) -> dict[str, str]:
    with PersonaStore(target) as store:
        return {fact.content: fact.writer or "" for fact in store.list()}


def test_the_dry_run_shows_every_source_and_preset_and_changes_no_byte(database, tmp_path):
    home = Path(os.environ["HOME"])
    populate(home)
    before = every_file(tmp_path)
    done = runner.invoke(app, [*store_args(database), "init", "--dry-run"])
    assert done.exit_code == 0, done.output
    assert every_file(tmp_path) == before
    out = done.stdout
    for shown in (f"Hermes USER.md: {home}/.hermes/memories/USER.md (--from hermes)\n  4 facts to add",
                  "3 notes offered for review, not imported", "  ? line 5: User asked to always run ruff",
                  f"Hermes persona.md: {home}/.hermes/memory/persona.md (--from persona-md, then taken over",
                  f"Claude Code: {home}/.claude/CLAUDE.md (--from instructions)\n  5 facts to add",
                  "  + [Code style] Use 4-space indentation in Python; tabs nowhere.",
                  f"Codex: {home}/.codex/AGENTS.md", f"Gemini CLI: {home}/.gemini/GEMINI.md",
                  f"add target 'claude-code': a region of {home}/.claude/CLAUDE.md (budget 2000 tokens)",
                  "add target 'codex'", "add target 'gemini'"):
        assert shown in out, shown
    if not database.is_postgres:
        assert "(Mnemosyne's database; profile_isolation off): 1 persona fact already in it" in out


def test_yes_imports_everything_adds_the_presets_and_keeps_the_users_text(database, tmp_path):
    home = Path(os.environ["HOME"])
    populate(home)
    claude = (home / ".claude" / "CLAUDE.md").read_bytes()
    done = runner.invoke(app, [*store_args(database), "init", "--yes"])
    assert done.exit_code == 0, done.output
    facts = held(database, home)
    assert len(facts) == 4 + 4 + 5 + 1 + 2 + (0 if database.is_postgres else 1)
    assert {writer.split(":")[0] for writer in facts.values()} == {"import", "adopt", "learn"} | (
        set() if database.is_postgres else {"unknown"})  # Mnemosyne's own fact came before persona-tier
    # A host's own memory comes in as learned from it (the host loads it itself), a user's instruction file as an
    # import.
    assert facts["Works in Python and Rust; uses uv, never pip."] == "learn:hermes"
    assert "learn:gemini" in facts.values() and f"import:instructions:{home}/.codex/AGENTS.md" in facts.values()
    assert facts["I'm a data engineer: most of my code is SQL and Python."] == \
        f"adopt:{home}/.hermes/memory/persona.md"
    assert "User asked to always run ruff before committing." not in facts  # notes are offered, not taken
    config = (home / ".hermes" / "mnemosyne" / "persona.yaml")
    assert os.stat(config).st_mode & 0o777 == 0o600
    assert all(f"path: {home}/{name}" in config.read_text() for name in (".claude/CLAUDE.md", ".codex/AGENTS.md",
                                                                         ".gemini/GEMINI.md"))
    after = (home / ".claude" / "CLAUDE.md").read_bytes()
    assert after.startswith(claude) and b"<!-- persona-tier:begin profile=default -->" in after
    assert b"- Name is Dana; prefers to be called Dana, not Danielle." in after  # from Hermes, into Claude's file
    [copy] = (home / ".hermes" / "memory").glob("persona.md.before-persona-tier-*")
    assert copy.read_text() == (DATA / "hand" / "persona.md").read_text()
    assert "Keep answers short; no preamble." in (home / ".hermes" / "memory" / "persona.md").read_text()

    before = every_file(tmp_path)
    again = runner.invoke(app, [*store_args(database), "init", "--yes"])
    assert again.exit_code == 0, again.output
    assert "to add" not in again.stdout.replace("0 facts to add", "") and "add target" not in again.stdout
    assert f"{home}/.hermes/memory/persona.md is a render of persona-tier's: nothing to import" in again.stdout
    assert held(database, home) == facts
    changed = {name for name, sha in every_file(tmp_path).items() if before.get(name) != sha}
    assert {name for name in changed if not name.startswith("home/.hermes/mnemosyne/data/")} == set()


def test_declining_changes_nothing_and_an_empty_home_finds_nothing(tmp_path):
    home = Path(os.environ["HOME"])
    empty = runner.invoke(app, ["init"])
    assert empty.exit_code == 0 and "found nothing to import" in empty.stdout
    assert every_file(home) == {}
    populate(home)
    before = every_file(tmp_path)
    declined = runner.invoke(app, ["init"], input="n\n")
    assert declined.exit_code == 0 and declined.stdout.rstrip().endswith("nothing was changed")
    assert every_file(tmp_path) == before


def test_a_refused_source_is_named_and_the_others_still_come_in(tmp_path):
    home = Path(os.environ["HOME"])
    populate(home)
    (home / ".gemini" / "GEMINI.md").write_text("- " + "z" * 2001 + "\n- Fine.\n")
    done = runner.invoke(app, ["init", "--yes"])
    assert done.exit_code == 1
    assert f"import {home}/.gemini/GEMINI.md: not done: {home}/.gemini/GEMINI.md: line 1: content is 2001 " \
        "characters" in done.stdout
    facts = held_at(home / MNEMOSYNE_DB)
    assert "Fine." not in facts and "Never force-push; ask first." in facts
    assert runner.invoke(app, ["init", "--yes", "--skip-bad"]).exit_code == 0
    assert "Fine." in held_at(home / MNEMOSYNE_DB)


def test_codexs_override_file_is_the_one_imported_and_written_while_it_exists(tmp_path):
    """Codex loads ~/.codex/AGENTS.override.md instead of AGENTS.md while it exists: init imports the override's
    facts and puts the codex region there, where Codex will read it; AGENTS.md is left as it was."""
    home = Path(os.environ["HOME"])
    populate(home)
    override = home / ".codex" / "AGENTS.override.md"
    override.write_text("## Testing\n\n- Runs the tests before every commit.\n")
    plain = digest(home / ".codex" / "AGENTS.md")
    shown = runner.invoke(app, ["init", "--dry-run"])
    assert shown.exit_code == 0 and f"reads {override} instead of {home}/.codex/AGENTS.md" in shown.stdout
    done = runner.invoke(app, ["init", "--yes"])
    assert done.exit_code == 0, done.stdout
    facts = held_at(home / MNEMOSYNE_DB)
    assert "Runs the tests before every commit." in facts and "Never force-push; ask first." not in facts
    text = override.read_text()
    assert text.startswith("## Testing\n\n- Runs the tests before every commit.\n") or \
        "- Runs the tests before every commit.\n" in text
    assert "persona-tier:begin" in text and digest(home / ".codex" / "AGENTS.md") == plain


def test_forgetting_a_fact_init_imported_names_the_users_own_lines_truly(tmp_path):
    """init imports the bullets of ~/.claude/CLAUDE.md, and the file's region does not repeat them (issue 38, 8);
    forgetting one says the text is still in the user's own lines (which persona-tier never edits), once, not that
    a render failed."""
    home = Path(os.environ["HOME"])
    populate(home)
    assert runner.invoke(app, ["init", "--yes"]).exit_code == 0
    claude = home / ".claude" / "CLAUDE.md"
    with PersonaStore(home / MNEMOSYNE_DB) as store:
        fact = next(f for f in store.list() if f.writer and f.writer.endswith(str(claude))
                    and f.content in claude.read_text().split("<!-- persona-tier:begin")[0])
    before = claude.read_text()
    assert before.count(fact.content) == 1  # the user's line only: the region never repeats it
    done = runner.invoke(app, ["forget", str(fact.id)])
    assert done.exit_code == 0, done.stderr
    assert claude.read_text() == before  # the user's line stays theirs
    assert done.stderr.count(str(claude)) == 1
    assert f"warning: {claude} still holds the text in your own lines, outside persona-tier's region" in done.stderr
    assert "this render could not write it" not in done.stderr
    own = claude.read_text().split("<!-- persona-tier:begin")[0]
    with PersonaStore(home / MNEMOSYNE_DB) as store:
        other = next(f for f in store.list() if f.writer and f.writer.endswith(str(claude)) and f.content in own)
    answer = json.loads(runner.invoke(app, ["forget", "--json", str(other.id)]).stdout)
    assert answer["in_users_text"] == [str(claude)] == answer["still_holding"]


def test_the_dry_run_counts_the_entries_the_store_has_superseded_or_forgotten(database):
    """A source still listing a fact the user replaced since, and one the user forgot: the plan counts both, says
    why neither comes back, and never shows a forgotten text; another profile's plan offers both as new."""
    home = Path(os.environ["HOME"])
    codex = home / ".codex" / "AGENTS.md"
    codex.parent.mkdir()
    codex.write_text("## Git\n\n- Never force-push; ask first.\n- Rebases onto main before merging.\n")
    args = store_args(database)
    assert runner.invoke(app, [*args, "import", "--from", "instructions", str(codex)]).exit_code == 0
    with PersonaStore(database.target if database.is_postgres else home / MNEMOSYNE_DB) as store:
        ids = {fact.content: fact.id for fact in store.list()}
    replaced = runner.invoke(app, [*args, "replace", str(ids["Never force-push; ask first."]), "Never force-push."])
    assert replaced.exit_code == 0, replaced.output
    assert runner.invoke(app, [*args, "forget", str(ids["Rebases onto main before merging."])]).exit_code == 0
    plan = runner.invoke(app, [*args, "init", "--dry-run"]).stdout
    assert (f"Codex: {codex} (--from instructions)\n  0 facts to add, 0 already there, 1 superseded (replaced in "
            "the store since: not brought back), 1 forgotten (`persona forget` keeps them out; never shown), "
            "0 refused") in plan, plan
    assert "Rebases onto main" not in plan
    bob = runner.invoke(app, [*args, "init", "--dry-run", "-p", "bob"]).stdout
    assert f"Codex: {codex} (--from instructions)\n  2 facts to add, 0 already there, 0 refused" in bob, bob


def test_init_scans_the_imported_and_stored_facts_and_shows_the_proposals(database):
    """Two hosts' files say the same twice in other words and one changes the other: init proposes them (the scan
    of `persona review --scan`) and shows them; another profile has none of them."""
    home = Path(os.environ["HOME"])
    (home / ".claude").mkdir()
    (home / ".codex").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("- Uses VS Code as the editor.\n- Answers tersely.\n")
    (home / ".codex" / "AGENTS.md").write_text("- Main editor is Neovim now, not VS Code.\n"
                                               "- Keep answers terse, no recap.\n")
    target = database.target if database.is_postgres else home / MNEMOSYNE_DB
    if not database.is_postgres:  # the default store is Mnemosyne's database in the home: made as Mnemosyne does
        (home / MNEMOSYNE_DB).parent.mkdir(parents=True)
        with closing(sqlite3.connect(home / MNEMOSYNE_DB)) as conn, conn:
            conn.executescript(MNEMOSYNE_SCHEMA.read_text())
    with PersonaStore(target, supersede_detect="off") as quiet:  # stored before: no write proposed anything
        quiet.add("Lives in Lisbon.", topic="home")
        quiet.add("Moved to Porto last month.", topic="home")
    done = runner.invoke(app, [*store_args(database), "init", "--yes"])
    assert done.exit_code == 0, done.output
    shown = done.stdout.partition("3 open proposals among the facts")[2]
    assert "update  #1 Lives in Lisbon." in shown and "update  #3 Uses VS Code as the editor." in shown
    assert "merge   #4 Answers tersely." in shown
    with PersonaStore(target) as mine, PersonaStore(target, profile="bob") as bob:
        assert sorted(proposal.kind for proposal in mine.proposals()) == ["merge", "update", "update"]
        assert bob.proposals() == []


def test_init_offers_each_host_whose_folder_is_there_and_imports_its_own_file(tmp_path):
    """OpenCode, Amp, Zed, Goose and Kilo Code join the hosts init looks for: a host whose folder exists gets its
    user-level preset and its file is imported; OpenCode's target waits while OpenCode reads ~/.claude/CLAUDE.md;
    a host that is not installed is not offered."""
    home = Path(os.environ["HOME"])
    (home / ".config" / "opencode").mkdir(parents=True)
    (home / ".config" / "zed").mkdir(parents=True)
    (home / ".config" / "zed" / "AGENTS.md").write_text("- Prefers tabs in Go code.\n", encoding="utf-8")
    (home / ".kilocode" / "rules").mkdir(parents=True)
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("- Answers tersely.\n", encoding="utf-8")
    plan = runner.invoke(app, ["init", "--dry-run"])
    assert plan.exit_code == 0, plan.output
    for preset in ("claude-code", "zed", "kilo"):
        assert f"add target {preset!r}: a region of" in plan.stdout
    assert f"add target 'opencode': a region of {home}/.config/opencode/AGENTS.md (budget 2000 tokens), waiting: " \
           f"the host reads {home}/.claude/CLAUDE.md while" in plan.stdout
    assert "'amp'" not in plan.stdout and "'goose'" not in plan.stdout
    done = runner.invoke(app, ["init", "--yes"])
    assert done.exit_code == 0, done.output
    with PersonaStore(home / MNEMOSYNE_DB) as store:
        held_facts = {fact.content for fact in store.list()}
    assert {"Prefers tabs in Go code.", "Answers tersely."} <= held_facts
    zed = (home / ".config" / "zed" / "AGENTS.md").read_text(encoding="utf-8")
    assert "Prefers tabs in Go code." in zed and "Answers tersely." in zed
    assert not (home / ".config" / "opencode" / "AGENTS.md").exists()  # it waits: OpenCode reads CLAUDE.md
    claude = (home / ".claude" / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.count("Prefers tabs in Go code.") == 1  # reaching OpenCode through Claude Code's file, once


def test_a_hosts_own_memory_comes_in_as_learned_from_it_and_stays_out_of_its_own_persona(tmp_path):
    """Hermes loads its USER.md itself: init imports its entries as learned from Hermes, so Hermes' persona block
    leaves them out (each fact once) while Claude Code's region carries them, and `persona learn` takes none of
    them again; the other profile of the store gets nothing."""
    home = Path(os.environ["HOME"])
    (home / ".hermes" / "memories").mkdir(parents=True)
    (home / ".hermes" / "memories" / "USER.md").write_text("Name is Dana.\n§\nUses fish shell.\n", encoding="utf-8")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("- Answers tersely.\n", encoding="utf-8")
    assert runner.invoke(app, ["init", "--yes"]).exit_code == 0
    writers = held_at(home / MNEMOSYNE_DB)
    assert writers["Name is Dana."] == writers["Uses fish shell."] == "learn:hermes"
    hermes = runner.invoke(app, ["inject", "--host", "hermes"])
    assert hermes.exit_code == 0 and "Answers tersely." in hermes.stdout and "fish" not in hermes.stdout
    claude = (home / ".claude" / "CLAUDE.md").read_text(encoding="utf-8")
    assert claude.count("Uses fish shell.") == 1 and claude.count("Answers tersely.") == 1
    learned = runner.invoke(app, ["learn"])
    assert learned.exit_code == 0 and "learned 0 new facts" in learned.stdout, learned.stdout
    assert runner.invoke(app, ["list", "--profile", "bob"]).stdout.count("fish") == 0
