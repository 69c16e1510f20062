"""`persona edit`'s plan and apply (pipeline/interchange/edit.py): a saved edit file becomes replaces (with lineage and
undo), updates, demotes or forgets, and adds written by `edit`, in one transaction; every problem is named with its
line before anything is written; a write while the editor was open applies nothing. Both backends; editing alice
never touches bob."""

from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline import PersonaStore, import_source
from pipeline.errors import EditConflict, EditError, InputError, StoreError
from pipeline.interchange.edit import apply_edit, plan_edit
from pipeline.interchange.edit_file import edit_text, parse_edit, read_base, with_problems
from pipeline.store.erasure import forget_fact

from ..conftest import write
from ..support.databases import fail_inserts_of


def seeded(database):
    alice = database.store(profile="alice", writer="cli")
    bob = database.store(profile="bob", writer="cli")
    npm = alice.add("Uses npm for JavaScript projects", topic="tools").fact
    alice.reinforce(npm.id)
    berlin = alice.add("Lives in Berlin", topic="home", reason="said so").fact
    terse = alice.add("Answers tersely.", topic="style").fact
    bob.add("Bob's own fact", topic="style")
    return alice, bob, {"npm": npm.id, "berlin": berlin.id, "terse": terse.id}


def entry_of(text: str, fact_id: int) -> str:
    """The block of one fact in an edit file (its comment and its entry)."""
    found = re.search(rf"# #{fact_id}: .*\n- id: {fact_id}\n(?:  .*\n)+", text)
    assert found, text
    return found.group(0)


def saved(alice, edit) -> tuple[object, str]:
    base = read_base(alice)
    return base, edit(edit_text(base, alice.label))


def state(store) -> list[tuple]:
    return [(f.id, f.topic, f.content, f.tier, f.confidence, f.reinforcement_count, f.promotion_reason, f.writer)
            for f in store.list()]


def test_a_saved_edit_replaces_updates_demotes_and_adds_in_one_transaction_and_bob_is_untouched(database):
    alice, bob, ids = seeded(database)
    bob_before, bob_generation = state(bob), bob.generation()

    def edit(text: str) -> str:
        text = text.replace("content: Uses npm for JavaScript projects", "content: Uses pnpm for JavaScript projects")
        berlin = entry_of(text, ids["berlin"])
        text = text.replace(berlin, berlin.replace("tier: long_term", "tier: permanent").replace(
            "confidence: 0.7", "confidence: 0.9"))
        text = text.replace(entry_of(text, ids["terse"]), "")
        return text + "- topic: drinks\n  content: Prefers tea\n  key: drink\n"

    base, text = saved(alice, edit)
    plan = plan_edit(alice, base, parse_edit(text))
    assert plan.counts() == {"added": 1, "changed": 2, "removed": 1}
    assert [(step.kind, step.changed) for step in plan.steps] == [
        ("demote", ()), ("replace", ("content",)), ("update", ("tier", "confidence")), ("add", ())]
    done = apply_edit(alice, plan)

    (old, new), = done.replaced
    assert old == ids["npm"] and done.updated == [ids["berlin"]] and done.demoted == [ids["terse"]]
    facts = {fact.content: fact for fact in alice.list()}
    assert set(facts) == {"Uses pnpm for JavaScript projects", "Lives in Berlin", "Prefers tea"}
    assert facts["Uses pnpm for JavaScript projects"].writer == "edit" and facts["Prefers tea"].writer == "edit"
    assert (facts["Lives in Berlin"].tier, facts["Lives in Berlin"].confidence) == ("permanent", 0.9)
    assert facts["Lives in Berlin"].promotion_reason == "said so" and facts["Lives in Berlin"].writer == "cli"
    assert [link.how for link in alice.history(new)] == ["replaced", None]  # lineage, as `persona replace` keeps
    assert database.execute("SELECT preference, context_snippet FROM memoria_preferences WHERE session_id = 'alice'") \
        == [("[demoted from long_term] Answers tersely.", "removed in persona edit")]  # demoted, as `demote` does
    assert "drink" in edit_text(read_base(alice), alice.label)  # the new fact holds its key

    alice.undo_replace(new)  # and `persona undo-replace` takes the correction back
    assert alice.get(ids["npm"]).reinforcement_count == 1
    assert state(bob) == bob_before and bob.generation() == bob_generation


def test_the_demoted_fact_leaves_a_tombstone_and_is_not_added_again_without_force(database):
    alice, _, ids = seeded(database)
    base, text = saved(alice, lambda text: text.replace(entry_of(text, ids["terse"]), ""))
    apply_edit(alice, plan_edit(alice, base, parse_edit(text)))
    base, text = saved(alice, lambda text: text + "- topic: style\n  content: Answers tersely.\n")
    with pytest.raises(EditError, match=r"line \d+: that fact was demoted; pass --force to add it again"):
        plan_edit(alice, base, parse_edit(text))
    added = apply_edit(alice, plan_edit(alice, base, parse_edit(text), force=True)).added
    assert alice.get(added[0]).content == "Answers tersely."


def test_an_entry_without_its_id_line_is_still_its_fact_and_nothing_is_added_twice(database):
    alice, _, ids = seeded(database)
    before = state(alice)

    def edit(text: str) -> str:
        text = text.replace(f"- id: {ids['npm']}\n  topic: tools", "- topic: tools")  # the id line deleted
        return text + "- topic: home\n  content: Lives in Berlin\n  tier: permanent\n"  # pasted in again

    base, text = saved(alice, edit)
    with pytest.raises(EditError, match=r"repeats the topic, text and scope of the entry on line \d+"):
        plan_edit(alice, base, parse_edit(text))  # the file says it twice
    berlin = entry_of(text, ids["berlin"])
    plan = plan_edit(alice, base, parse_edit(text.replace(berlin, "")))
    assert [(step.kind, step.old.id if step.old else None, step.changed) for step in plan.steps] == [
        ("update", ids["berlin"], ("tier",))]  # its reason stays: the pasted entry did not say one
    apply_edit(alice, plan)
    assert state(alice) == [(ids["berlin"], "home", "Lives in Berlin", "permanent", 0.7, 0, "said so", "cli"),
                            *(fact for fact in before if fact[0] != ids["berlin"])]


def test_a_failure_in_the_middle_of_the_apply_changes_nothing(database):
    alice, _, ids = seeded(database)
    before = state(alice)

    def edit(text: str) -> str:
        text = text.replace("content: Lives in Berlin", "content: Lives in Paris")
        return text.replace(entry_of(text, ids["terse"]), "") + "- topic: drinks\n  content: Prefers tea\n"

    base, text = saved(alice, edit)
    plan = plan_edit(alice, base, parse_edit(text))
    fail_inserts_of(database, "Prefers tea", "disk on fire")  # the last step, after a demote and a replace
    with pytest.raises(StoreError, match="disk on fire"):
        apply_edit(alice, plan)
    assert state(alice) == before
    assert database.execute("SELECT COUNT(*) FROM persona_superseded")[0][0] == 0
    assert database.execute("SELECT COUNT(*) FROM memoria_preferences")[0][0] == 0


def line_of(text: str, line: str, after: int = 0) -> int:
    """The 1-based number of the first line equal to ``line`` after line ``after``."""
    return text.splitlines().index(line, after) + 1


def test_every_problem_of_the_file_is_named_with_its_line_and_nothing_is_written(database):
    alice, bob, ids = seeded(database)
    before, bob_id = state(alice), bob.list()[0].id

    def edit(text: str) -> str:
        npm, berlin = entry_of(text, ids["npm"]), entry_of(text, ids["berlin"])
        text = text.replace(npm, npm.replace("topic: tools", "topic: tools\n  key: slot\n  writer: me"))
        text = text.replace(berlin, berlin.replace("reason: said so", "reason: said so\n  key: slot"))
        return text + (f"- id: {bob_id}\n  topic: style\n  content: Not mine\n"  # another profile's id
                       "- topic: home\n  content: Lives in Berlin\n")  # what a fact the file keeps says

    base, text = saved(alice, edit)
    npm, berlin = line_of(text, f"- id: {ids['npm']}"), line_of(text, f"- id: {ids['berlin']}")
    bobs, again = line_of(text, f"- id: {bob_id}"), line_of(text, "- topic: home")
    with pytest.raises(EditError, match=rf"^4 problems in the edited file: line {bobs}: id {bob_id}: profile 'alice' "
                                        r"has no such fact .*; leave the id out to add the entry as a new fact; "):
        plan_edit(alice, base, parse_edit(text))
    try:
        plan_edit(alice, base, parse_edit(text))
    except EditError as error:
        assert [(line, what.split(" (")[0]) for line, what in error.problems] == [
            (bobs, f"id {bob_id}: profile 'alice' has no such fact"),
            (berlin, f"repeats the key of the entry on line {npm}"),
            (again, f"repeats the topic, text and scope of the entry on line {berlin}"),
            (npm, "writer: who wrote a fact is recorded by persona-tier")]
    assert state(alice) == before


def test_bad_yaml_and_bad_entries_are_named_by_line_and_shown_above_the_users_text():
    with pytest.raises(EditError, match=r"^1 problem in the edited file: line 4: bad YAML: "):
        parse_edit("facts:\n- topic: a\n  content: b\n- id: [\n")
    text = "# mine\nfacts:\n- topic: a\n  content: b\n  tier: forever\n- topic: c\n  content: d\n  colour: red\n"
    with pytest.raises(EditError) as raised:
        parse_edit(text)
    assert raised.value.problems == [
        (5, "tier: input should be 'permanent', 'long_term' or 'working'"),
        (8, "colour: not a field of a fact (those are topic, content, tier, confidence, reason, id, key, "
            "reinforcement_count, writer, scope)")]
    shown = with_problems(text, raised.value.problems)
    lines = shown.splitlines()
    assert lines[1] == "# error: line 8: tier: input should be 'permanent', 'long_term' or 'working'"
    assert lines[7] == "  tier: forever" and lines[10] == "  colour: red"  # the numbers name the lines as shown
    assert shown.endswith(text)
    again = with_problems(shown, [(8, "tier: still wrong")])  # the next round replaces the problems above
    assert again.splitlines()[:2] == [again.splitlines()[0], "# error: line 7: tier: still wrong"]
    assert again.splitlines()[6] == "  tier: forever" and again.endswith(text)


def test_forgotten_text_a_swap_and_a_forget_that_reaches_a_kept_fact_are_refused(database, tmp_path):
    alice, _, ids = seeded(database)
    # The same text once case and spacing are folded, under another topic: `add` finds it already there (#50), a
    # facts file may still say it twice.
    import_source(alice, write(tmp_path / "twin.yaml", "facts:\n  - {topic: home2, content: lives in  BERLIN}\n"))
    twin = next(fact for fact in alice.list() if fact.topic == "home2")
    gone = alice.add("Was born in 1980", topic="me").fact
    forget_fact(alice, gone.id)
    before = state(alice)

    def edit(text: str) -> str:
        npm = "topic: tools\n  content: Uses npm for JavaScript projects"
        terse = "topic: style\n  content: Answers tersely."
        text = text.replace(npm, "<swap>").replace(terse, npm).replace("<swap>", terse)  # the two trade places
        text = text.replace(entry_of(text, ids["berlin"]), "")
        return text + "- topic: me\n  content: Was born in 1980\n"

    base, text = saved(alice, edit)
    with pytest.raises(EditError) as raised:
        plan_edit(alice, base, parse_edit(text), forget=True)
    npm, terse = line_of(text, f"- id: {ids['npm']}"), line_of(text, f"- id: {ids['terse']}")
    kept = line_of(text, f"- id: {twin.id}")
    assert raised.value.problems == [
        (npm, f"#{ids['terse']} holds this topic and text until its own change is applied; change one of the two now "
              "and the other in a second edit"),
        (terse, f"#{ids['npm']} holds this topic and text until its own change is applied; change one of the two now "
                "and the other in a second edit"),
        (line_of(text, "- topic: me"), "that fact was forgotten (persona forget); pass --force to take it in again"),
        (kept, f"--forget forgets #{ids['berlin']}, and with it #{twin.id} (the same text, or one chain of "
               f"replacements): remove #{twin.id} too, or demote instead")]
    assert state(alice) == before


def test_the_forget_flag_forgets_removed_facts_for_real_in_the_same_transaction(database):
    alice, bob, ids = seeded(database)
    base, text = saved(alice, lambda text: text.replace(entry_of(text, ids["terse"]), "").replace(
        "content: Lives in Berlin", "content: Lives in Paris"))
    plan = plan_edit(alice, base, parse_edit(text), forget=True)
    assert [step.kind for step in plan.steps] == ["forget", "replace"]
    done = apply_edit(alice, plan)
    (text_gone, erasure), = done.erased
    assert text_gone == "Answers tersely." and erasure.facts == [ids["terse"]] and done.demoted == []
    assert all("Answers tersely." not in str(row) for table in ("memoria_persona", "memoria_preferences",
                                                               "persona_superseded")
               for row in database.rows(table))
    with pytest.raises(EditError, match="forgotten"):
        plan_edit(alice, read_base(alice), parse_edit(edit_text(read_base(alice), alice.label) +
                                                      "- topic: style\n  content: Answers tersely.\n"))
    assert [fact.content for fact in bob.list()] == ["Bob's own fact"]


def test_keys_move_leave_and_arrive_as_the_file_names_them(database):
    alice, _, ids = seeded(database)
    keyed = "- topic: tools\n  content: Uses uv for Python\n  key: python_tool\n"
    base, text = saved(alice, lambda text: text.replace("topic: tools\n", "topic: tools\n  key: js_tool\n") + keyed)
    apply_edit(alice, plan_edit(alice, base, parse_edit(text)))

    def edit(text: str) -> str:
        text = text.replace("  key: js_tool\n", "").replace("key: python_tool", "key: js_tool")
        berlin = entry_of(text, ids["berlin"])
        return text.replace(berlin, berlin + "  key: city\n")

    base, text = saved(alice, edit)
    plan = plan_edit(alice, base, parse_edit(text))
    assert sorted((step.old.id, step.changed) for step in plan.steps if step.old) == sorted(
        [(ids["npm"], ("key",)), (ids["berlin"], ("key",)),
         (next(f.id for f in alice.list() if f.content == "Uses uv for Python"), ("key",))])
    apply_edit(alice, plan)
    with alice.read() as conn:
        slots = dict(conn.execute("SELECT key, persona_id FROM persona_keys WHERE session_id = 'alice'").fetchall())
    uv = next(f.id for f in alice.list() if f.content == "Uses uv for Python")
    assert slots == {"js_tool": uv, "city": ids["berlin"]}


def test_a_write_while_the_editor_was_open_applies_nothing_and_says_what_changed(database):
    alice, _, ids = seeded(database)
    base, text = saved(alice, lambda text: text.replace("content: Lives in Berlin", "content: Lives in Paris"))
    plan = plan_edit(alice, base, parse_edit(text))
    with database.store(profile="alice") as other:  # another process's store, as another tool would write
        added = other.add("Prefers tea", topic="drinks").fact
        other.reinforce(ids["npm"])
    before = state(alice)
    with pytest.raises(EditConflict, match=rf"^profile 'alice' changed while the editor was open \(#{added.id} "
                                           rf"added; #{ids['npm']} changed\); nothing was applied$"):
        apply_edit(alice, plan)
    assert state(alice) == before


AWKWARD = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
                  max_size=40).filter(lambda text: text.strip() != "")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topic=AWKWARD, content=AWKWARD)
@example(topic="yes", content="null")
@example(topic="# not a comment", content="- not a list: {not: a mapping}")
@example(topic="x", content="line one\n\n  line three, indented\n")
@example(topic="x", content="\x07bell \x1b[31mred\u2028\x85 'single' \"double\" \\ back")
@example(topic="1.0", content="0x1F")
@example(topic="x", content="0\x850 a\u2029b")  # Unicode line breaks: written raw, a reader folded them to spaces
def test_any_fact_survives_the_edit_file_unchanged(tmp_path, topic, content):
    """Whatever a fact says (quotes, #, colons, newlines, leading spaces, YAML words), opening and saving the file
    as shown plans nothing."""
    with PersonaStore(tmp_path / "fuzz.db", profile=uuid.uuid4().hex) as store:  # a profile of its own each time
        try:
            store.add(content, topic=topic)
        except InputError:  # text the store itself refuses never reaches an edit file
            return
        base = read_base(store)
        assert plan_edit(store, base, parse_edit(edit_text(base, store.label))).empty
