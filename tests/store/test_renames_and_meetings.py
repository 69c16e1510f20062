"""A thing's name is not the user's (a renamed project is a change, the user's name still only replaced by a name),
and two meetings named apart are look-alikes, not one meeting moved (issue 50, the second pass)."""

from __future__ import annotations

import pytest

RENAMES = [
    ("The side project is called Kestrel.", "We renamed Kestrel to Osprey."),
    ("Das Projekt heißt Seestern.", "Das Projekt wurde in Seepferd umbenannt."),
    ("Le projet s'appelle Garance.", "Le projet a été renommé Pervenche."),
    ("Il progetto si chiama Ortica.", "Ortica è stato rinominato in Malva."),
]
TWO_MEETINGS = [
    ("Weekly sync with the design lead on Tuesdays at 3.", "Weekly demo for sales on Thursdays at 3."),
    ("Dienstags um 9 Uhr ist Architektur-Runde.", "Donnerstags um 9 Uhr ist Kunden-Review."),
]
MOVED = ("The weekly sync with the design lead is on Tuesdays at 3.", "The weekly sync moved to Wednesdays at 3.")


def updates(store, old: str, new: str, topic: str = "work") -> list[str]:
    first = store.add(old, topic=topic).fact
    return [p.kind for p in store.add(new, topic=topic).proposals if first.id in (p.old.id, p.new.id)]


@pytest.mark.parametrize(("old", "new"), RENAMES)
def test_a_renamed_project_is_proposed_as_a_change(database, old, new):
    with database.store(profile="alice") as alice, database.store(profile="bob") as bob:
        assert updates(alice, old, new) == ["update"]
        assert bob.proposals() == [] and bob.list() == []  # another profile sees nothing of it


def test_the_users_name_is_still_replaced_by_nothing_but_a_name(database):
    with database.store(profile="alice") as alice:
        assert updates(alice, "Is called Dana.", "We renamed the repo to dana-tools.", topic="general") == []
        assert updates(alice, "Heißt Mira.", "Das Projekt wurde in Mira umbenannt.", topic="allgemein") == []


@pytest.mark.parametrize(("old", "new"), TWO_MEETINGS)
def test_two_meetings_named_apart_are_not_one_meeting_moved(database, old, new):
    with database.store(profile="alice") as alice:
        assert updates(alice, old, new) == []


def test_a_meeting_moved_is_still_proposed(database):
    with database.store(profile="alice") as alice:
        assert updates(alice, *MOVED) == ["update"]
