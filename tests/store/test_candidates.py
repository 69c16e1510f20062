"""Which older facts a write is judged against (issue 38: bounded, yet not blind): those sharing a stem with it
come first, however many newer facts of the topic share none; the topic's latest fill the rest. Both backends;
a second profile's facts are never candidates."""

from __future__ import annotations

# Facts of one topic that share no content stem with the pairs below, nor with each other's pairs.
OTHERS = ["Keeps notes in plain text files.", "Reads the changelog before upgrading.", "Likes short commit messages.",
          "Reviews pull requests in the morning.", "Prefers dark themes everywhere.", "Writes tests before fixes.",
          "Uses two monitors at the desk.", "Takes a walk after lunch.", "Backs up the laptop every Sunday.",
          "Turns notifications off while focusing.", "Names branches after the issue number.",
          "Keeps the inbox at zero.", "Drinks water from a steel bottle.", "Listens to jazz while coding.",
          "Plans the week on Monday morning.", "Avoids meetings before ten."]


def _written(store, old: str, between: int, topic: str = "tools") -> int:
    fact = store.add(old, topic=topic).fact
    for other in OTHERS[:between]:
        store.add(other, topic=topic)
    return fact.id


def test_a_change_sharing_no_word_is_found_among_the_topics_twelve_latest(database):
    """"Edits in Sublime Text" / "I've been on Helix for a month now": no stem in common, so only recency brings
    the old fact; eleven newer facts of the topic between them (the window was eight)."""
    store = database.store(profile="alice")
    old = _written(store, "Edits in Sublime Text.", between=11)
    database.store(profile="bob").add("Edits in Sublime Text.", topic="tools")
    proposals = store.add("I've been on Helix for a month now.", topic="tools").proposals
    assert ("update", old) in [(proposal.kind, proposal.old.id) for proposal in proposals]


def test_a_change_sharing_a_stem_is_found_behind_more_newer_facts_than_are_judged(database):
    """Sixteen newer facts share nothing with the new one; the old one shares "shell", and a shared stem outranks
    recency (the topic's own key counts for none), so it is judged though only twelve are."""
    store = database.store(profile="alice")
    old = _written(store, "Uses zsh as the shell.", between=16)
    proposals = store.add("Switched my shell over to fish.", topic="tools").proposals
    assert (proposals[0].kind, proposals[0].old.id) == ("update", old)  # the strongest first
    assert database.store(profile="bob").add("Switched my shell over to fish.", topic="tools").proposals == ()


def test_beyond_the_window_a_change_sharing_no_word_nor_slot_is_not_judged_and_nothing_is_lost(database):
    """The bound's price, stated: thirteen newer facts push a change that shares no word and fills no slot
    (:mod:`pipeline.store.slots`) out of reach; both facts stay (a proposal deletes nothing either way), and the
    related facts still show the writer the latest."""
    store = database.store(profile="alice")
    _written(store, "Takes the bus to work.", between=13)
    old = store.list()[0].id
    written = store.add("Has been cycling for a month now.", topic="tools")
    assert old not in [proposal.old.id for proposal in written.proposals]
    assert {"Takes the bus to work.", "Has been cycling for a month now."} <= {f.content for f in store.list()}
    assert OTHERS[12] in [fact.content for fact in written.related]


def test_beyond_the_window_a_change_of_the_same_slot_is_found_by_its_slot(database):
    """"Edits in Sublime Text" / "I've been on Helix for a month now" share no word but their slot (the
    editor), which the stem index keeps as one more stem (issue 50): thirteen newer facts do not hide it."""
    store = database.store(profile="alice")
    old = _written(store, "Edits in Sublime Text.", between=13)
    database.store(profile="bob").add("Edits in Sublime Text.", topic="tools")
    written = store.add("I've been on Helix for a month now.", topic="tools")
    assert [(proposal.kind, proposal.old.id) for proposal in written.proposals] == [("update", old)]



def test_an_index_made_by_another_reader_is_made_again_at_the_next_write(database):
    """A fact indexed before the word lists changed (here: its rows lost, the index marked as another reader's, as
    a store indexed before a stems change is) is indexed again at the next check, so its slot still finds it;
    bob's index is his own and stays as it was."""
    store, bob = database.store(profile="alice"), database.store(profile="bob")
    old = _written(store, "Lives in Lisbon.", between=13, topic="home")
    bob.add("Lives in Lisbon.", topic="home")
    stems = "persona_stem_sets" if database.is_postgres else "persona_stems"  # each backend's index (stem_sets.py)
    with store.transaction() as conn:
        conn.execute(f"DELETE FROM {stems} WHERE profile = ? AND persona_id = ?", ("alice", old))
        conn.execute("UPDATE persona_stem_readers SET reader = ? WHERE profile = ?", ("", "alice"))
        kept = conn.execute(f"SELECT COUNT(*) FROM {stems} WHERE profile = ?", ("bob",)).fetchone()[0]
    written = store.add("Relocated to Porto in the spring.", topic="home")
    assert [(proposal.kind, proposal.old.id) for proposal in written.proposals] == [("update", old)]
    with store.transaction() as conn:
        assert conn.execute(f"SELECT COUNT(*) FROM {stems} WHERE profile = ?", ("bob",)).fetchone()[0] == kept
