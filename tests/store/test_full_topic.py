"""Precise in a full topic (issue 50, point 2): a write proposes only the facts of its topic that speak of the same
slot, no more than the evidence supports, and answers with the topic's facts closest to it, so the fact it changes
is in the writer's view however many facts came after it. Both backends; a second profile sees none of it."""

from __future__ import annotations

# topic: (the old fact, the facts written after it, the change)
TOPICS = {
    "tools": ("Uses pip to install Python packages.",
              ["Uses Neovim as the main editor.", "Uses ruff for linting.", "Uses pytest for tests.",
               "Keeps dotfiles in a git repo.", "Uses tmux for terminal sessions.", "Runs mypy in strict mode."],
              "Switched to uv; doesn't use pip anymore."),
    "work": ("Works at Globex as a backend engineer.",
             ["Reviews pull requests in the morning.", "Prefers async standups.", "Writes design docs before coding.",
              "Pairs with juniors on Fridays.", "Keeps meetings under thirty minutes."],
             "Left Globex; now works at Initech."),
    "home": ("Lives in Lisbon.",
             ["Has a cat named Miso.", "Cycles to the office.", "Grows tomatoes on the balcony.",
              "Likes quiet cafes to work from.", "Goes hiking on weekends.", "Has a standing desk at home.",
              "Reads before bed."],
             "Moved to Porto last month."),
    "food": ("Is vegetarian.",
             ["Loves spicy food.", "Drinks oat milk.", "Is allergic to peanuts.", "Cooks pasta on Sundays.",
              "Avoids sugary snacks."],
             "Started eating meat again."),
    "schedule": ("The team standup is at 9:30.",
                 ["Blocks focus time after lunch.", "Takes Fridays off every other week.", "Answers email twice a day.",
                  "Plans the week on Monday morning.", "Does code review after standup."],
                 "The team standup moved to 10:00."),
}


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
