"""`tick --all-profiles` visits only the profiles one query finds due: never fewer than a visit would act on.

The check that matters: for profiles in every state a trigger or retention
looks at, the query names exactly those whose tick would do something, and
the rest are reported "up to date" and left alone.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from pipeline import PersonaStore, evaluate, load_settings, plan_retention, tick_all
from pipeline.schedule.due import due_profiles


def make_settings(database, **overrides):
    return load_settings(overrides={
        **database.settings(), "targets.markdown.output": "store", "injection.source": "store",
        "triggers.daily_sync_hour": 0, "triggers.interval": 2, "store.memory_scope": "profile",
        "retention.working_ttl_hours": 1, "retention.half_life_days": 0.25, "retention.promote_after": 2,
        **overrides})


def acts(settings, profile, clock) -> bool:
    """Whether a tick of ``profile`` now would apply retention or render: what the visit itself decides."""
    with PersonaStore.from_settings(settings, profile=profile, clock=clock) as store:
        return bool(plan_retention(store, settings.retention)) or any(t.fired for t in evaluate(settings, store))


def due(settings, clock) -> set[str]:
    with PersonaStore.from_settings(settings, clock=clock) as store:
        found = due_profiles(settings, store)
    assert found is not None
    return set(found)


def add(settings, profile, clock, content, **options):
    with PersonaStore.from_settings(settings, profile=profile, clock=clock) as store:
        return store.add(content, topic="t", **options)


SETTLED = ["settled", "changed", "block-lost", "working-expires", "working-later", "decays-away",
           "reinforced-elsewhere", "memories"]


@pytest.fixture
def profiles(database, clock):
    """Profiles in every state, rendered at noon; then each gets its own reason to be due (or none)."""
    settings = make_settings(database)
    for name in SETTLED:
        add(settings, name, clock, f"{name}'s rule")
    add(settings, "working-expires", clock, "short-lived", tier="working")
    add(settings, "decays-away", clock, "faint", tier="long_term", confidence=0.06)
    fact = add(settings, "reinforced-elsewhere", clock, "repeated", tier="working")
    assert {t.outcome for t in tick_all(settings, clock=clock)} == {"rendered"}

    clock.now += timedelta(minutes=30)
    add(settings, "working-later", clock, "added at 12:30", tier="working")
    add(settings, "changed", clock, "a new rule")
    database.execute("DELETE FROM persona_blocks WHERE profile = 'block-lost'")
    # Another tool counts reinforcements without recording a store change: only retention notices.
    database.execute("UPDATE memoria_persona SET reinforcement_count = 2 WHERE id = ?", (fact.fact.id,))
    database.add_memory("m1", "note", session="memories")
    database.add_memory("m2", "note", session="memories")
    database.add_memory("m3", "note", session="settled")  # one memory: below the interval of 2
    add(settings, "never-rendered", clock, "new user")
    tick_all(settings, clock=clock)  # renders what is due at 12:30, so only later causes remain
    clock.now += timedelta(hours=1, minutes=30)  # 14:00: both working facts are past 1 h; 0.06 decayed to 0.048
    return settings


def test_the_query_names_exactly_the_profiles_a_visit_would_act_on(profiles, clock):
    names = [*SETTLED, "never-rendered"]
    acting = {name for name in names if acts(profiles, name, clock)}
    assert acting == {"working-expires", "working-later", "decays-away"}
    assert due(profiles, clock) == acting


def test_each_cause_makes_its_profile_due(database, clock):
    settings = make_settings(database)
    for name in ("settled", "changed", "block-lost", "memories", "reinforced"):
        add(settings, name, clock, f"{name}'s rule", tier="working" if name == "reinforced" else "long_term")
    tick_all(settings, clock=clock)
    assert due(settings, clock) == set()
    with PersonaStore.from_settings(settings, profile="settled", clock=clock) as store:
        reasons = {t.name: t.reason for t in evaluate(settings, store)}
    assert reasons["cold_start"] == "every stored block exists"
    assert reasons["recovery"] == "no persona file to read (every target is stored)"
    add(settings, "changed", clock, "a new rule")
    database.execute("DELETE FROM persona_blocks WHERE profile = 'block-lost'")
    database.add_memory("m1", "note", session="memories")
    database.add_memory("m2", "note", session="memories")
    database.execute("UPDATE memoria_persona SET reinforcement_count = 5 WHERE session_id = 'reinforced'")
    add(settings, "never-rendered", clock, "new user")
    expected = {"changed", "block-lost", "memories", "reinforced", "never-rendered"}
    assert {name for name in expected | {"settled"} if acts(settings, name, clock)} == expected
    assert due(settings, clock) == expected


def test_the_survey_names_the_profiles_a_trigger_fires_for_before_its_pass_over_every_fact(database, clock):
    """What a sweep hears first (and starts preparing its renders on) is the triggers' answer; retention's pass
    adds its profiles after it, and the whole is what one question of both gives."""
    settings = make_settings(database)
    for name in ("changed", "expires", "settled"):
        add(settings, name, clock, f"{name}'s rule", tier="working" if name == "expires" else "long_term")
    tick_all(settings, clock=clock)
    add(settings, "changed", clock, "a new rule")
    clock.now += timedelta(hours=2)  # past the working tier's hour: retention's
    heard: list[list[str]] = []
    with PersonaStore.from_settings(settings, clock=clock) as store:
        found = due_profiles(settings, store, found=heard.append)
    assert heard == [["changed"]]
    assert found == ["changed", "expires"]
    assert {name for name in ("changed", "expires", "settled") if acts(settings, name, clock)} == set(found)


def test_a_new_day_or_a_new_config_makes_every_profile_due(database, clock):
    settings = make_settings(database, **{"retention.enabled": False})
    for name in ("alice", "bob"):
        add(settings, name, clock, "rule")
    tick_all(settings, clock=clock)
    assert due(settings, clock) == set()
    changed = make_settings(database, **{"retention.enabled": False, "cap.token_cap": 900})
    assert due(changed, clock) == {"alice", "bob"}
    clock.now += timedelta(hours=12)  # past midnight, the daily sync hour
    assert due(settings, clock) == {"alice", "bob"}


def test_tick_all_visits_only_due_profiles_and_reports_the_rest_up_to_date(profiles, clock, database):
    before = database.execute("SELECT COUNT(*) FROM persona_runs")[0][0]
    ticks = {t.profile: t.outcome for t in tick_all(profiles, clock=clock)}
    assert {name for name, outcome in ticks.items() if outcome != "up to date"} == {
        "working-expires", "working-later", "decays-away"}
    assert all(ticks[name] == "rendered" for name in ("working-expires", "working-later", "decays-away"))
    assert database.execute("SELECT COUNT(*) FROM persona_runs")[0][0] == before + 3
    assert due(profiles, clock) == set()  # retention applied, rendered: nothing left


def test_force_visits_every_profile(profiles, clock):
    ticks = tick_all(profiles, clock=clock, force=True)
    assert {t.outcome for t in ticks} == {"rendered"} and len(ticks) == len(SETTLED) + 1


def test_a_file_target_means_every_profile_is_visited(database, clock, tmp_path):
    settings = load_settings(overrides={**database.settings(),
                                        "injection.file": str(tmp_path / "persona-{profile}.md")})
    add(settings, "alice", clock, "rule")
    with PersonaStore.from_settings(settings, clock=clock) as store:
        assert due_profiles(settings, store) is None  # whether a file exists is a question for this host
    assert [t.outcome for t in tick_all(settings, clock=clock)] == ["rendered"]
    (tmp_path / "persona-alice.md").unlink()
    assert [t.outcome for t in tick_all(settings, clock=clock)] == ["rendered"]


def test_around_each_boundary_the_query_never_misses_what_a_visit_would_do(database, clock):
    settings = make_settings(database)
    add(settings, "working", clock, "short-lived", tier="working")
    add(settings, "faint", clock, "fading", tier="long_term", confidence=0.1)  # below 0.05 after 0.25 days
    tick_all(settings, clock=clock)
    noon = clock.now
    for name, boundary in (("working", timedelta(hours=1)), ("faint", timedelta(hours=6))):
        for offset in (-1, 0, 1):
            clock.now = noon + boundary + timedelta(seconds=offset)
            acting = {each for each in ("working", "faint") if acts(settings, each, clock)}
            assert (name in acting) == (offset > 0) or offset == 0  # the boundary is where we think it is
            assert acting <= due(settings, clock), (name, offset)


def test_a_session_id_no_profile_can_have_is_skipped_with_one_warning(database, clock, caplog):
    settings = make_settings(database)
    add(settings, "alice", clock, "rule")
    for bad in ("", "   ", "x" * 1500):  # written by another tool
        database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) "
                         "VALUES (?, 'long_term', 't', 'stray')", (bad,))
    with caplog.at_level("WARNING", logger="pipeline.schedule.due"):
        ticks = tick_all(settings, clock=clock)
    assert [(t.profile, t.outcome) for t in ticks] == [("alice", "rendered")]  # never '' ticked as default
    warnings = [r.getMessage() for r in caplog.records if r.name == "pipeline.schedule.due"]
    assert len(warnings) == 1 and warnings[0].startswith("skipping 3 profile(s) whose session_id cannot be")
    assert database.execute("SELECT DISTINCT session_id FROM persona_runs") == [("alice",)]


def test_a_fact_decayed_far_past_the_float_range_is_due_not_an_error(database, clock):
    # 0.5^2000 underflows: PostgreSQL raises on that, which once failed the whole sweep for every profile.
    settings = make_settings(database, **{"retention.half_life_days": 1})
    add(settings, "alice", clock, "rule")
    add(settings, "victim", clock, "rule")
    tick_all(settings, clock=clock)
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, created_at, "
                     "last_reinforced_at) VALUES ('victim', 'long_term', 't', 'ancient', 1e-300, "
                     "'2020-01-01 00:00:00', '2020-01-01 00:00:00')")
    assert acts(settings, "victim", clock) and due(settings, clock) == {"victim"}
    assert {t.profile: t.outcome for t in tick_all(settings, clock=clock)} == {"victim": "rendered",
                                                                                "alice": "up to date"}


@pytest.mark.parametrize("stamp", ["not a date", "", "infinity", "2026-05-10T08:00:00.5+02:00"])
def test_another_tools_odd_timestamp_fails_nothing(database, clock, stamp):
    # PostgreSQL cannot cast such text: it now has no age, as julianday() makes it on SQLite.
    settings = make_settings(database)
    for name in ("alice", "bob"):
        add(settings, name, clock, "rule")
    tick_all(settings, clock=clock)
    database.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, created_at, last_reinforced_at) "
                     "VALUES ('bob', 'long_term', 't', 'odd', ?, ?)", (stamp, stamp))
    add(settings, "alice", clock, "a new rule")
    ticks = {t.profile: t.outcome for t in tick_all(settings, clock=clock)}
    assert ticks["alice"] == "rendered" and ticks["bob"] in ("rendered", "up to date")


def test_when_the_due_query_cannot_run_every_profile_is_visited(database, clock, caplog):
    settings = make_settings(database)
    add(settings, "alice", clock, "rule")
    tick_all(settings, clock=clock)
    # A table the query reads is gone (another tool's doing): the sweep falls back to visiting every
    # profile, and each visit reports its own failure, as before there was a query.
    database.execute("DROP TABLE working_memory")
    with caplog.at_level("WARNING", logger="pipeline.schedule.tick"):
        ticks = tick_all(settings, clock=clock)
    assert "could not ask which profiles are due" in caplog.text
    assert [t.profile for t in ticks] == ["alice"] and ticks[0].outcome == "failed"  # the visit says why itself


def test_a_run_time_in_another_format_is_left_to_the_visit(database, clock):
    settings = make_settings(database, **{"triggers.daily_sync_hour": 12, "retention.enabled": False})
    clock.now = clock.now.replace(hour=8)
    for name in ("alice", "bob", "carol"):
        add(settings, name, clock, "rule")
    tick_all(settings, clock=clock)
    database.execute("UPDATE persona_runs SET run_at = '2026-05-10T08:00:00' WHERE session_id = 'bob'")
    database.execute("UPDATE persona_runs SET run_at = '2026-05-10 08:00:00+00:00' WHERE session_id = 'carol'")
    clock.now = clock.now.replace(hour=12, minute=30)  # past the daily sync hour: all three are due
    assert {name for name in ("alice", "bob", "carol") if acts(settings, name, clock)} == {"alice", "bob", "carol"}
    assert due(settings, clock) == {"alice", "bob", "carol"}
