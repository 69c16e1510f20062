"""Every importer on files in the shapes the real tools write: the right facts, topics, tiers and provenance; a
second run adds nothing; a dry run writes nothing; forgotten, demoted, too long and bad entries are refused with
their line, and nothing is written unless the rest is asked for. Both backends."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import FactsFileError, PersonaError, PersonaStore, import_source
from pipeline.interchange.formats import known_formats, read_source
from pipeline.store.erasure import forget_fact

from ..conftest import REPO, write

DATA = REPO / "tests" / "data" / "imports"
# file, format, and the facts it holds: (topic, content, tier, confidence)
SOURCES = {
    "mnemosyne-persona-md": ("mnemosyne/persona.md", "persona-md", {
        ("communication", "Answers tersely.", "permanent", 0.9),
        ("communication", "Uses British spelling.", "long_term", 0.8),
        ("git", "Never force-push; ask first.", "long_term", 0.7),
        ("tooling", "Uses uv, never pip.", "long_term", 0.75)}),
    "hand-written-persona-md": ("hand/persona.md", "persona-md", {
        ("Communication", "Keep answers short; no preamble.", "long_term", 0.7),
        ("Communication", "No emojis, ever.", "long_term", 0.7),
        ("Work", "I'm a data engineer: most of my code is SQL and Python.", "long_term", 0.7),
        ("Work", "Deploys go through Argo CD, never by hand.", "long_term", 0.7)}),
    "hermes-user-md": ("hermes/memories/USER.md", "hermes", {
        ("identity", "Name is Dana; prefers to be called Dana, not Danielle.", "long_term", 0.7),
        ("style", "Communication: wants short, direct answers without preamble. Uses British spelling in prose.",
         "long_term", 0.7),
        ("tools", "Works in Python and Rust; uses uv, never pip.", "long_term", 0.7),
        ("location", "Timezone Europe/Berlin; not available before 9am (§ 3 of her contract says so).", "long_term",
         0.7)}),
    "claude-md": ("claude/CLAUDE.md", "instructions", {
        ("Code style", "Use 4-space indentation in Python; tabs nowhere.", "long_term", 0.7),
        ("Code style", "Prefer f-strings; except in logging calls, which take %-style arguments.", "long_term", 0.7),
        ("Code style", "Write docstrings in the imperative mood.", "long_term", 0.7),
        ("Testing", "Run the tests before every commit.", "long_term", 0.7),
        ("Testing", "Never mock the database; use a real one in a temp dir.", "long_term", 0.7)}),
    "agents-md-with-our-region": ("codex/AGENTS.md", "instructions", {
        ("Git", "Never force-push; ask first.", "long_term", 0.7),
        ("Git", "Commit messages in the imperative, under 72 characters.", "long_term", 0.7)}),
    "gemini-md": ("gemini/GEMINI.md", "instructions", {
        ("General", "Answer in English even when I write in German.", "long_term", 0.7),
        ("General", "Show shell commands for bash, not PowerShell.", "long_term", 0.7)}),
    "copilot-instructions": (".github/copilot-instructions.md", "instructions", {
        ("Conventions", "Prefer `const` over `let`.", "long_term", 0.7),
        ("Conventions", "No default exports.", "long_term", 0.7)}),
    "cursor-mdc": (".cursor/rules/python.mdc", "instructions", {
        ("general", "Use type hints on every public function.", "long_term", 0.7),
        ("general", "Prefer pathlib over os.path.", "long_term", 0.7)}),
    "chatgpt-memories": ("pasted/chatgpt-memories.txt", "lines", {
        ("food", "Is a vegetarian.", "long_term", 0.7), ("general", "Prefers metric units.", "long_term", 0.7),
        ("general", "Has a dog named Pixel.", "long_term", 0.7),
        ("general", "Is learning Japanese and wants example sentences with furigana.", "long_term", 0.7)}),
    "claude-memory": ("pasted/claude-memory.md", "lines", {
        ("Work context", "Staff engineer at a logistics company; works mostly on routing services in Go.",
         "long_term", 0.7),
        ("Work context", "Reviews are async; prefers written design docs over meetings.", "long_term", 0.7),
        ("Personal context", "Lives in Lyon and cycles to work.", "long_term", 0.7)}),
    "claude-answer": ("pasted/claude-answer.md", "assistant", {
        ("work", "Staff engineer at a logistics company; works mostly on routing services in Go.", "long_term", 0.7),
        ("work", "Prefers written design docs over meetings.", "long_term", 0.7),
        ("style", "Wants answers without a summary of what was just said.", "long_term", 0.7)}),
    "mem0-get-all": ("mem0/get_all.json", "mem0", {
        ("food", "Is a vegetarian and allergic to nuts", "long_term", 0.7),
        ("communication", "Prefers concise answers without small talk", "long_term", 0.7),
        ("travel", "Planning a trip to Japan in October", "long_term", 0.7)}),
}
HIDDEN = {".github/copilot-instructions.md": "copilot", ".cursor/rules/python.mdc": "cursor"}


def fixture(name: str) -> Path:
    relative = SOURCES[name][0]
    return DATA / HIDDEN[relative] / relative if relative in HIDDEN else DATA / relative


def held(store: PersonaStore) -> set[tuple[str, str, str, float]]:
    return {(f.topic, f.content, f.tier, round(f.confidence, 2)) for f in store.list()}


def test_every_format_has_a_real_shaped_file_here():
    assert {fmt for _, fmt, _ in SOURCES.values()} | {"facts"} == set(known_formats())


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_each_importer_gives_the_right_facts_topics_tiers_and_provenance_and_a_second_run_adds_nothing(
        store, name):
    _, fmt, expected = SOURCES[name]
    path = fixture(name)
    report = import_source(store, path, fmt)
    assert held(store) == expected and len(report.added) == len(expected) and report.refused == []
    assert {fact.writer for fact in store.list()} == {f"import:{fmt}:{path}"}
    before = [fact.to_dict() for fact in store.list()]
    again = import_source(store, path, fmt)
    assert again.added == [] and again.updated == [] and len(again.unchanged) == len(expected)
    assert [fact.to_dict() for fact in store.list()] == before


def test_the_mnemosyne_fixture_is_what_mnemosynes_own_writer_writes():
    from mnemosyne.core.persona import render_persona_markdown

    candidates = [
        {"topic": "communication", "content": "Answers tersely.", "importance": 0.9, "tier": "permanent"},
        {"topic": "communication", "content": "Uses British spelling.", "importance": 0.8, "tier": "long_term"},
        {"topic": "tooling", "content": "Uses uv, never pip.", "importance": 0.75},
        {"topic": "git", "content": "Never force-push; ask first.", "importance": 0.7, "tier": "working"},
    ]
    assert (DATA / "mnemosyne" / "persona.md").read_text() == render_persona_markdown(candidates)


def test_a_dry_run_on_a_read_only_store_writes_nothing_and_says_what_it_would_do(database, tmp_path):
    with database.store() as store:
        import_source(store, fixture("gemini-md"), "instructions")
    before = _kept(database)
    with database.store(readonly=True) as store:
        report = import_source(store, fixture("claude-md"), "instructions", dry_run=True)
        again = import_source(store, fixture("gemini-md"), "instructions", dry_run=True)
    assert _kept(database) == before
    assert report.dry_run and report.added == [] and [e["outcome"] for e in report.entries] == ["add"] * 5
    assert report.entries[0] == {"where": "line 7", "outcome": "add", "topic": "Code style", "tier": "long_term",
                                 "content": "Use 4-space indentation in Python; tabs nowhere.", "id": None}
    assert {e["outcome"] for e in again.entries} == {"unchanged"} and all(e["id"] for e in again.entries)


def test_a_dry_run_on_a_missing_database_creates_nothing(tmp_path):
    with PersonaStore(tmp_path / "none.db", readonly=True) as store:
        report = import_source(store, fixture("hermes-user-md"), "hermes", dry_run=True)
    assert len(report.entries) == 4 and not (tmp_path / "none.db").exists()


def _kept(database) -> object:
    if database.is_postgres:
        return [database.rows(table) for table in ("memoria_persona", "persona_births", "persona_origins")]
    return hashlib.sha256(Path(database.target).read_bytes()).hexdigest()


def test_a_forgotten_fact_is_skipped_by_its_line_and_the_rest_is_imported(store):
    forget_fact(store, store.add("Uses uv, never pip.", topic="tooling").fact.id)
    dry = import_source(store, fixture("mnemosyne-persona-md"), "persona-md", dry_run=True)
    skipped = [entry for entry in dry.entries if entry["outcome"] == "forgotten"]
    assert skipped == [{"where": "line 14", "outcome": "forgotten", "topic": "tooling", "tier": "long_term",
                        "content": None, "id": None, "why": skipped[0]["why"]}]  # the text is not repeated
    report = import_source(store, fixture("mnemosyne-persona-md"), "persona-md")
    assert (len(report.added), report.skipped_forgotten, report.refused) == (3, ["line 14"], [])
    assert "Uses uv, never pip." not in {fact.content for fact in store.list()}


def test_a_demoted_fact_too_long_text_and_bad_entries_are_each_refused_with_their_line(store, tmp_path):
    store.demote(store.add("Is a vegetarian.", topic="general").fact.id)
    path = write(tmp_path / "memories.txt", "Is a vegetarian.\nLikes tea.\n" + "x" * 2001 + "\n")
    with pytest.raises(FactsFileError) as caught:
        import_source(store, path, "lines")
    assert "memories.txt: line 3: content is 2001 characters; the limit is 2000 (store.max_fact_chars)" in \
        str(caught.value)
    assert "memories.txt: line 1: that fact was demoted; pass --force" in str(caught.value)
    assert store.list() == []
    bad = write(tmp_path / "persona.md", "## style\n\n- Answers tersely. [importance: high]\n- Fine.\n")
    with pytest.raises(FactsFileError, match=r"persona\.md: line 3: confidence: input should be a valid number"):
        import_source(store, bad, "persona-md")
    broken = write(tmp_path / "get_all.json", '{"results": [{"memory": "Kept."}, {"id": "m2", "text": "x"}]}')
    with pytest.raises(FactsFileError, match=r"memory #2 \(id m2\): expected an object with the memory's text"):
        import_source(store, broken, "mem0")
    assert len(import_source(store, broken, "mem0", skip_bad=True).added) == 1


def test_hermes_memory_md_is_offered_as_notes_and_taken_in_only_when_accepted(store):
    path = DATA / "hermes" / "memories" / "MEMORY.md"
    report = import_source(store, path, "hermes")
    assert report.added == [] and store.list() == []
    assert [note["where"] for note in report.notes] == ["line 1", "line 3", "line 5"]
    assert report.notes[2]["content"] == "User asked to always run ruff before committing."
    accepted = import_source(store, path, "hermes", accept_notes=True, topic="agent notes")
    assert len(accepted.added) == 3 and accepted.notes == []
    assert {(fact.topic, fact.tier) for fact in store.list()} == {("agent notes", "working")}


def test_topic_comes_from_the_source_else_the_one_given(store, tmp_path):
    import_source(store, fixture("chatgpt-memories"), "lines", topic="chatgpt")
    import_source(store, fixture("cursor-mdc"), "instructions", topic="python")
    rule = write(tmp_path / "style.mdc", '---\ndescription: Shell style\nglobs: "*.sh"\n---\n\n- Quote variables.\n')
    import_source(store, rule, "instructions", topic="ignored: the rule names its own")
    assert {fact.topic for fact in store.list()} == {"chatgpt", "python", "Shell style"}


def test_a_fact_another_source_already_gave_is_not_imported_twice_whatever_its_topic(store, tmp_path):
    import_source(store, fixture("mnemosyne-persona-md"), "persona-md")
    again = write(tmp_path / "GEMINI.md", "- answers   TERSELY.\n- Something new.\n- Something new.\n")
    report = import_source(store, again, "instructions")
    assert len(report.added) == 1 and len(report.unchanged) == 1 and len(store.list()) == 5


def test_an_import_never_changes_a_fact_the_user_changed_since_but_a_facts_file_does(store, tmp_path):
    import_source(store, fixture("mnemosyne-persona-md"), "persona-md")
    fact = next(f for f in store.list() if f.content == "Answers tersely.")
    store.demote(next(f for f in store.list() if f.content == "Uses British spelling.").id)
    store.reinforce(fact.id)
    report = import_source(store, fixture("mnemosyne-persona-md"), "persona-md", skip_bad=True)
    assert report.updated == [] and store.get(fact.id).reinforcement_count == 1
    assert [r.why for r in report.refused] == ["that fact was demoted; pass --force to take it in again"]
    facts = write(tmp_path / "facts.yaml", "- {topic: communication, content: Answers tersely., tier: working}\n")
    assert import_source(store, facts).updated == [fact.id] and store.get(fact.id).tier == "working"


def test_each_profile_gets_its_own_import(database):
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob:
        import_source(alice, fixture("mem0-get-all"), "mem0")
        assert bob.list() == []
        assert len(import_source(bob, fixture("mem0-get-all"), "mem0").added) == 3
        assert len(import_source(alice, fixture("mem0-get-all"), "mem0").unchanged) == 3


def test_mem0_keeps_where_each_memory_came_from_and_reads_the_bare_list_too(store, tmp_path):
    import_source(store, fixture("mem0-get-all"), "mem0")
    reasons = {fact.content: fact.promotion_reason for fact in store.list()}
    assert reasons["Is a vegetarian and allergic to nuts"] == \
        "mem0 memory 892db2ae-06d9-49e5-8b3e-585ef9b85b8e, created 2025-03-01T10:23:45.123456-08:00"
    bare = write(tmp_path / "old.json", '[{"id": "1", "memory": "Drinks oolong.", "hash": "h", "metadata": null}]')
    assert len(import_source(store, bare, "mem0").added) == 1
    with pytest.raises(FactsFileError, match=r"old\.json:1:1: not JSON"):
        import_source(store, write(tmp_path / "old.json", "memories: yes"), "mem0")


def test_our_own_region_is_never_imported_and_broken_markers_name_the_line(store, tmp_path):
    _, parsed = read_source(fixture("agents-md-with-our-region"), "instructions")
    assert "A fact persona-tier rendered here earlier." not in {item.fact.content for item in parsed.facts}
    broken = write(tmp_path / "CLAUDE.md", "- Mine.\n<!-- persona-tier:begin profile=default -->\n- Ours.\n")
    with pytest.raises(FactsFileError, match=r"CLAUDE\.md, line 2: a region begins but never ends.*nothing was "
                       "imported"):
        import_source(store, broken, "instructions")
    assert store.list() == []


PIECES = ["\n", "§", "\n§\n", "---\n", "- ", "* ", "1. ", "## ", "# ", "  ", "```\n", "[importance: 0.5]",
          "[importance: 9]", "(permanent)", "<!-- persona-tier:begin profile=default -->\n",
          "<!-- persona-tier:end profile=default -->\n", '{"results": [', '{"memory": "m"}', "]}", "\x00", "日本"]


@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=30).map("".join),
       fmt=st.sampled_from(sorted(known_formats())))
def test_any_text_in_any_format_reads_as_entries_or_one_typed_error(tmp_path_factory, text, fmt):
    path = tmp_path_factory.mktemp("fuzz") / "MEMORY.md"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        _, parsed = read_source(path, fmt)
    except PersonaError as error:
        assert "\n" not in str(error)
        return
    for item in [*parsed.facts, *parsed.notes]:
        assert item.fact.content.strip() == item.fact.content and "\x00" not in item.fact.content
    assert all(refusal.where and refusal.why for refusal in parsed.bad)


def test_an_imported_fact_is_global_and_a_projects_fact_with_the_same_text_is_another(store, tmp_path):
    project = store.add("Prefers pathlib over os.path.", topic="general", scope="project:example.org/app").fact
    report = import_source(store, write(tmp_path / "GEMINI.md", "- Prefers pathlib over os.path.\n"), "instructions")
    assert len(report.added) == 1 and report.added != [project.id]
    assert {fact.scope for fact in store.list()} == {None, "project:example.org/app"}
