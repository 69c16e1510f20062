"""The full render and the fair fit's choice are reused while everything that decides them is unchanged (#40), and
never past a change: each render of a warm process gives the bytes a new process gives, across every change that
moves the render or the fit."""

from __future__ import annotations

import pytest

from pipeline import PersonaStore, TemplateError, load_settings, run_pipeline
from pipeline.render import prepared

from .test_render_cost import fresh_render, seed

BUDGET = "300"  # the 60 facts of `seed` need about 1,100 tokens: the fit cuts


def warm_render(overrides: dict[str, str]) -> str:
    settings = load_settings(overrides=overrides)
    with PersonaStore.from_settings(settings) as store:
        return run_pipeline(settings, store=store, dry_run=True)[0].text


@pytest.mark.slow
def test_a_warm_render_gives_a_new_process_bytes_across_every_change_that_moves_the_fit(database, tmp_path):
    base = {**database.settings(), "injection.file": str(tmp_path / "{profile}.md"), "cap.token_cap": BUDGET}
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**base, "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            seed(store, profile)
    changes = [
        ("first render", {}, None),
        ("nothing changed", {}, None),
        ("a smaller budget", {"cap.token_cap": "250"}, None),
        ("the budget back", {}, None),
        ("a note of our own", {"cap.truncation_note": "(more in persona list)"}, None),
        ("a fact reinforced: its score and what the template shows move",
         {}, "UPDATE memoria_persona SET reinforcement_count = reinforcement_count + 40 "
             "WHERE session_id = '{profile}' AND content LIKE '{profile} rule 59:%'"),
        ("a fact's tier changed by another tool",
         {}, "UPDATE memoria_persona SET tier = 'permanent' WHERE session_id = '{profile}' "
             "AND content LIKE '{profile} rule 58:%'"),
        ("a fact's text changed by another tool, the change counter not moved",
         {}, "UPDATE memoria_persona SET content = content || ' Always.' WHERE session_id = '{profile}' "
             "AND content LIKE '{profile} rule 1:%'"),
        ("a topic spelled another way by another tool: its facts join the first spelling's section",
         {}, "UPDATE memoria_persona SET topic = upper(topic) WHERE session_id = '{profile}' "
             "AND content LIKE '{profile} rule 2:%'"),
    ]
    for what, extra, statement in changes:
        for profile in ("alice", "bob"):
            if statement:
                database.execute(statement.format(profile=profile))
            overrides = {**base, **extra, "store.profile": profile}
            warm = warm_render(overrides)
            assert warm == fresh_render(overrides), f"{profile}, {what}"
            assert profile in warm and ({"alice", "bob"} - {profile}).pop() not in warm


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_limit_the_render_now_exceeds_fails_the_render_kept_before_it(tmp_path, dry_run):
    """A kept render is not an answer for settings under which the render fails: the limit is part of the key."""
    overrides = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={**overrides, "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            seed(store, profile)
            assert run_pipeline(settings, store=store, dry_run=dry_run)[0].text
        tight = load_settings(overrides={**overrides, "store.profile": profile, "render.max_output_chars": "200"})
        with PersonaStore.from_settings(tight) as store, pytest.raises(TemplateError, match="200"):
            run_pipeline(tight, store=store, dry_run=dry_run)


def test_a_forget_drops_the_kept_fit_with_the_facts_texts(tmp_path):
    """What a fit keeps holds the facts' texts: a forget clears every cache that may hold a fact's text
    (``pipeline.caches``), every profile's, and the other profile's next render keeps its own again."""
    from pipeline.schedule.forget import forget

    kept = {}
    for profile in ("alice", "bob"):
        settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"), "cap.token_cap": BUDGET,
                                            "injection.file": str(tmp_path / "{profile}.md"),
                                            "store.profile": profile})
        with PersonaStore.from_settings(settings) as store:
            seed(store, profile)
            run_pipeline(settings, store=store)
            kept[profile] = (store.label, profile), settings
    scope, settings = kept["alice"]
    assert "alice rule 0:" in repr(_kept_fits(scope))
    with PersonaStore.from_settings(settings) as store:
        victim = next(fact for fact in store.list() if fact.content.startswith("alice rule 0:"))
        forget(settings, store, victim.id)
    assert "alice rule 0:" not in repr(_kept_fits(scope))
    bob, bob_settings = kept["bob"]
    assert _kept_fits(bob) == {}
    with PersonaStore.from_settings(bob_settings) as store:
        run_pipeline(bob_settings, store=store)
    assert "bob rule 0:" in repr(_kept_fits(bob)) and "alice" not in repr(_kept_fits(bob))


def _kept_fits(scope: prepared.Scope) -> object:
    view = prepared.for_render(scope)
    return view._previous_fits
