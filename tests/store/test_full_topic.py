"""Precise in a full topic (issue 50, point 2): a write proposes only the facts of its topic that speak of the same
slot, no more than the evidence supports, and answers with the topic's facts closest to it, so the fact it changes
is in the writer's view however many facts came after it. Both backends; a second profile sees none of it."""

from __future__ import annotations

from benchmarks.pairs import DEV_TOPICS, topic_scores
from benchmarks.pairs import FULL_TOPICS as TOPICS  # `make bench` prints the same store's figures


def test_in_a_full_topic_each_change_names_its_old_fact_alone_and_keeps_it_in_view(database):
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        other.add("Lives in Lisbon.", topic="home")
        for topic, (old, between, new) in TOPICS.items():
            first = mine.add(old, topic=topic).fact
            for fact in between:
                mine.add(fact, topic=topic)
            written = mine.add(new, topic=topic)
            assert [(proposal.kind, proposal.old.id) for proposal in written.proposals] == [("update", first.id)]
            assert written.related[0].id == first.id  # the closest first, not the latest
        assert other.add("Moved to Porto last month.", topic="home").proposals[0].old.session_id == "bob"


def test_a_change_finds_its_slot_past_the_latest_facts_of_its_topic(store):
    """Twenty facts between, none sharing a word with the change: the slot (where the user lives) finds it."""
    first = store.add("Lives in Lisbon.", topic="home").fact
    for number in range(20):
        store.add(f"Keeps plant number {number} by the window.", topic="home")
    written = store.add("Relocated to Porto in the spring.", topic="home")
    assert [proposal.old.id for proposal in written.proposals] == [first.id]
    assert first.id in {fact.id for fact in written.related}


def test_related_ranks_the_topics_facts_by_closeness_not_recency(store):
    close = store.add("Edits code in Sublime Text.", topic="Tools").fact
    for fact in ("Keeps notes in plain text files.", "Reads the changelog before upgrading.",
                 "Takes a walk after lunch."):
        store.add(fact, topic="Tools")
    written = store.add("Prefers editing Markdown in Sublime Text with a dark theme.", topic="Tools")
    assert written.related[0].id == close.id


def test_topics_meet_case_and_unicode_insensitively_in_proposals(store):
    first = store.add("Lives in Zürich.", topic="Café")
    changed = store.add("Moved to Basel.", topic="CAFE\u0301")  # "CAFÉ" with a combining accent
    assert [proposal.old.id for proposal in changed.proposals] == [first.fact.id]


def test_a_change_word_alone_names_only_the_facts_that_share_most_with_it(database):
    """Only a change word and the topic as evidence (the "signal" rule): the facts that share the most words with
    the new one are proposed, not every fact of the topic up to the cap."""
    mine, other = database.store(profile="alice"), database.store(profile="bob")
    with mine, other:
        for store in (mine, other):
            old = store.add("Plays chess at the club.", topic="life").fact
            for fact in ("Reads science fiction.", "Keeps a journal.", "Bakes sourdough bread."):
                store.add(fact, topic="life")
            written = store.add("Switched to tennis; chess is boring.", topic="life")
            assert [(proposal.kind, proposal.old.id) for proposal in written.proposals] == [("update", old.id)]


def test_a_new_job_and_a_labelled_city_are_their_slots_and_change_only_them(store):
    """"Started a new job at Wise" fills the employer, "City: Cork" where the user lives: each names the fact of
    its slot, never the topic's other facts beside it."""
    employer = store.add("Backend developer at Monzo.", topic="job").fact
    for fact in ("On call one week a month.", "Sprint planning is every second Monday at 2pm."):
        store.add(fact, topic="job")
    job = store.add("Started a new job at Wise last week.", topic="job")
    assert [(proposal.kind, proposal.old.id) for proposal in job.proposals] == [("update", employer.id)]
    city = store.add("City: Dublin.", topic="general").fact
    store.add("Editor: Emacs.", topic="general")
    moved = store.add("City: Cork (moved in March).", topic="general")
    assert [(proposal.kind, proposal.old.id) for proposal in moved.proposals] == [("update", city.id)]


def test_the_development_scenarios_meet_the_issues_goals():
    """tests/data/dev_topics.yaml (tuned on; `make bench` prints it): at least 4 of 5 changes found in each
    scenario's share, and precision of 0.8 or more."""
    found, changes, right, said, _ = topic_scores(DEV_TOPICS)
    assert found >= 0.8 * changes and right >= 0.8 * said, (found, changes, right, said)
