"""Precise in a full topic (issue 50, point 2): a write proposes only the facts of its topic that speak of the same
slot, no more than the evidence supports, and answers with the topic's facts closest to it, so the fact it changes
is in the writer's view however many facts came after it. Both backends; a second profile sees none of it."""

from __future__ import annotations

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
