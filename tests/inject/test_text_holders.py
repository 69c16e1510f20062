"""Objects that keep text between calls (a source's last read, a session's last good persona) are declared
holders (pipeline/caches.py): a forget, by any way in, has each drop what it holds, and the next call reads again."""

from __future__ import annotations

import pytest

from pipeline import PersonaInjector, PersonaStore, caches, tick
from pipeline.cli import app

from ..conftest import local_settings, runner

SECRET, KEPT, BOBS = "Lives at 12 Quiet Lane, flat 3.", "Answers tersely.", "Bob plays the cello."
HOLDERS = ["file_source.held", "injector.held", "store_source.held"]


def settings_for(tmp_path, profile: str, **overrides):
    # A long interval: between two looks the injector answers from what it holds, as a warm host process does.
    return local_settings(tmp_path, {"injection.enabled": True, "store.profile": profile,
                                     "injection.check_interval_ms": 3_600_000,
                                     "injection.file": str(tmp_path / "{profile}.md"), **overrides})


def seeded(tmp_path) -> int:
    for profile, facts in (("alice", [KEPT, SECRET]), ("bob", [BOBS])):
        settings = settings_for(tmp_path, profile)
        with PersonaStore.from_settings(settings) as store:
            for fact in facts:
                store.add(fact, topic="life")
            tick(settings, store=store, force=True)
    return _id_of(tmp_path, SECRET)


def _id_of(tmp_path, text: str) -> int:
    with PersonaStore.from_settings(settings_for(tmp_path, "alice")) as store:
        return next(fact.id for fact in store.list() if fact.content == text)


def holding(text: str) -> list[str]:
    return [name for name in HOLDERS if any(text in held for held in caches.entries(name))]


@pytest.mark.parametrize("mode", ["live", "session"])
def test_a_forget_has_every_injector_and_source_drop_the_text_they_held(tmp_path, mode):
    secret = seeded(tmp_path)
    alice = PersonaInjector(settings_for(tmp_path, "alice", **{"injection.mode": mode}), session_id="s1")
    bob = PersonaInjector(settings_for(tmp_path, "bob", **{"injection.mode": mode}), session_id="s1")
    assert SECRET in alice.block() and BOBS in bob.block()
    assert holding(SECRET)  # the check below sees a copy when there is one
    done = runner.invoke(app, ["forget", str(secret), "--profile", "alice"],
                         env={"MNEMOSYNE_PERSONA_STORE__PATH": str(tmp_path / "m.db"),
                              "MNEMOSYNE_PERSONA_INJECTION__FILE": str(tmp_path / "{profile}.md")})
    assert done.exit_code == 0, done.output
    assert holding(SECRET) == []
    shown = alice.block()  # within the interval: read again, since what was held is gone
    assert SECRET not in shown and KEPT in shown
    assert BOBS in bob.block() and holding(SECRET) == []


def test_each_holder_is_declared_with_its_bound_and_as_holding_text():
    declared = {found.name: found for found in caches.declared()}
    assert all(declared[name].holds_text and declared[name].bound == 1 for name in HOLDERS)
