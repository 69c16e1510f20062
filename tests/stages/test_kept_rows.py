"""A kept store's render keeps the profile's checked rows while its change counter says they are unchanged, and
only ages them again (#40); never past a change: each warm render gives the bytes of a render that derives
nothing from before (its profile's memo dropped), for another tool's every kind of write, a moving clock, our
triggers gone, a tighter fact limit and a forget, with two profiles in one database."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from datetime import timedelta

from pipeline import PersonaStore, Settings, load_settings, run_pipeline
from pipeline.clock import Clock, to_db
from pipeline.render import prepared
from pipeline.render.model import FactSet, RankedPersona
from pipeline.schedule.forget import forget
from pipeline.stages.context import StageContext
from pipeline.stages.extract import _persona_facts
from pipeline.stages.rank import RankOptions
from pipeline.stages.registry import NoOptions, get_stage, stage, unregister

from .test_render_cost import fresh_render, seed

PROFILES = ("alice", "bob")


def settings_for(base: dict[str, str], profile: str, **extra: object) -> Settings:
    return load_settings(overrides={**base, **extra, "store.profile": profile})


def warm_and_from_scratch(store: PersonaStore, settings: Settings, clock: Clock | None = None) -> tuple[str, str]:
    """The kept store's render, then the same render with nothing kept from before."""
    warm = run_pipeline(settings, store=store, dry_run=True, clock=clock)[0].text
    prepared.drop((store.label, store.profile))
    return warm, run_pipeline(settings, store=store, dry_run=True, clock=clock)[0].text


def test_another_tools_every_write_shows_in_the_next_render_of_a_kept_store(database, tmp_path):
    base = {**database.settings(), "injection.file": str(tmp_path / "{profile}.md")}
    stores = {profile: PersonaStore.from_settings(settings_for(base, profile)) for profile in PROFILES}
    writes = [
        ("text", "UPDATE memoria_persona SET content = content || ' Always.' WHERE session_id = '{p}' "
                 "AND content LIKE '{p} rule 1:%'"),
        ("tier", "UPDATE memoria_persona SET tier = 'permanent' WHERE session_id = '{p}' "
                 "AND content LIKE '{p} rule 58:%'"),
        ("confidence", "UPDATE memoria_persona SET confidence = 0.01 WHERE session_id = '{p}' "
                       "AND content LIKE '{p} rule 3:%'"),
        ("reinforcements", "UPDATE memoria_persona SET reinforcement_count = 40 WHERE session_id = '{p}' "
                           "AND content LIKE '{p} rule 59:%'"),
        ("reinforced long ago", "UPDATE memoria_persona SET last_reinforced_at = '2001-01-01 00:00:00' "
                                "WHERE session_id = '{p}' AND content LIKE '{p} rule 4:%'"),
        ("no timestamp", "UPDATE memoria_persona SET last_reinforced_at = NULL, created_at = NULL "
                         "WHERE session_id = '{p}' AND content LIKE '{p} rule 5:%'"),
        ("topic", "UPDATE memoria_persona SET topic = 'moved' WHERE session_id = '{p}' "
                  "AND content LIKE '{p} rule 6:%'"),
        ("deleted", "DELETE FROM memoria_persona WHERE session_id = '{p}' AND content LIKE '{p} rule 7:%'"),
        ("inserted", "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) "
                     "VALUES ('{p}', 'permanent', 'new', '{p} wrote this elsewhere', 0.9)"),
        ("NULL confidence", "UPDATE memoria_persona SET confidence = NULL WHERE session_id = '{p}' "
                            "AND content LIKE '{p} rule 8:%'"),
    ]
    try:
        for profile, store in stores.items():
            seed(store, profile)
            run_pipeline(settings_for(base, profile), store=store, dry_run=True)
        for what, statement in [("nothing", None), *writes, ("nothing again", None)]:
            for profile, store in stores.items():
                if statement:
                    database.execute(statement.format(p=profile))
                warm, scratch = warm_and_from_scratch(store, settings_for(base, profile))
                assert warm == scratch, f"{profile}, {what}"
                assert profile in warm and ({"alice", "bob"} - {profile}).pop() not in warm
        database.execute("UPDATE memoria_persona SET session_id = 'bob' WHERE session_id = 'alice' "
                         "AND content LIKE 'alice rule 9:%'")  # a row moved to the other profile
        for profile, store in stores.items():
            warm, scratch = warm_and_from_scratch(store, settings_for(base, profile))
            assert warm == scratch and ("alice rule 9:" in warm) == (profile == "bob")
        assert warm == fresh_render({**base, "store.profile": "bob"})
    finally:
        for store in stores.values():
            store.close()


def test_kept_rows_age_with_the_clock(tmp_path, clock):
    """The order within a section moves as time passes (recency halves every 30 days): a kept store's render
    follows it, at each moment the render of a process that kept nothing."""
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    for profile in PROFILES:
        with PersonaStore.from_settings(settings_for(base, profile), clock=clock) as store:
            store.add(f"{profile}: old but sure", topic="style", tier="permanent", confidence=0.9)
            store.add(f"{profile}: new but unsure", topic="style", tier="permanent", confidence=0.6)
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
        conn.execute("UPDATE memoria_persona SET last_reinforced_at = '2026-03-01 00:00:00' "
                     "WHERE content LIKE '%old but sure'")
    stores = {profile: PersonaStore.from_settings(settings_for(base, profile), clock=clock) for profile in PROFILES}
    try:
        orders = []
        for _ in range(4):
            for profile, store in stores.items():
                warm, scratch = warm_and_from_scratch(store, settings_for(base, profile), clock)
                assert warm == scratch, (profile, clock.now)
                orders.append(warm.index("new but unsure") < warm.index("old but sure"))
            clock.now += timedelta(days=20)
        assert orders[0] and not orders[-1]  # the order did move
    finally:
        for store in stores.values():
            store.close()


def _rewrite_alices_first_rule_and_check(tmp_path, base, stores, turn: int) -> None:
    """Another tool rewrites alice's first rule; every profile's warm render is its render from scratch, and only
    alice's shows the new text."""
    with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
        conn.execute("UPDATE memoria_persona SET content = ? WHERE content LIKE 'alice rule 1:%'",
                     (f"alice rule 1: rewritten {turn}",))
    for profile, store in stores.items():
        warm, scratch = warm_and_from_scratch(store, settings_for(base, profile))
        assert warm == scratch and (f"rewritten {turn}" in warm) == (profile == "alice")


def test_writes_while_our_triggers_are_gone_show_in_the_next_render(tmp_path):
    """A tool that rebuilt Mnemosyne's table without our triggers writes without moving the change counter: while
    they are missing, a kept store reads the rows each time."""
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    stores = {profile: PersonaStore.from_settings(settings_for(base, profile)) for profile in PROFILES}
    try:
        for profile, store in stores.items():
            seed(store, profile)
            run_pipeline(settings_for(base, profile), store=store, dry_run=True)
        with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
            names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
            for name in names:
                conn.execute(f"DROP TRIGGER {name}")
        for turn in range(3):
            _rewrite_alices_first_rule_and_check(tmp_path, base, stores, turn)
    finally:
        for store in stores.values():
            store.close()


def test_one_trigger_dropped_after_warm_renders_is_noticed_at_the_next(tmp_path):
    """Our triggers are counted once per schema version (every CREATE or DROP moves it): a kept store that has
    counted them whole, then sees one dropped by another connection (and another tool's write it did not count),
    reads the rows again; once the trigger is back, the next write is counted and shown as well."""
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    stores = {profile: PersonaStore.from_settings(settings_for(base, profile)) for profile in PROFILES}
    try:
        for profile, store in stores.items():
            seed(store, profile)
            for _ in range(2):
                run_pipeline(settings_for(base, profile), store=store, dry_run=True)
        with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
            name, sql = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = "
                                     "'memoria_persona' AND sql LIKE '% AFTER UPDATE ON %'").fetchone()
            conn.execute(f"DROP TRIGGER {name}")
        for turn in range(2):  # the first render after the drop reads anew (the version is in the key); the next too
            for profile, store in stores.items():
                run_pipeline(settings_for(base, profile), store=store, dry_run=True)
            _rewrite_alices_first_rule_and_check(tmp_path, base, stores, turn)
        with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
            conn.execute(sql)
        for profile, store in stores.items():
            run_pipeline(settings_for(base, profile), store=store, dry_run=True)
        with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
            conn.execute("UPDATE memoria_persona SET content = 'bob rule 2: rewritten' "
                         "WHERE content LIKE 'bob rule 2:%'")
        for profile, store in stores.items():
            warm, scratch = warm_and_from_scratch(store, settings_for(base, profile))
            assert warm == scratch and ("rule 2: rewritten" in warm) == (profile == "bob")
    finally:
        for store in stores.values():
            store.close()


def test_a_tighter_fact_limit_and_a_forget_each_show_in_the_next_render(tmp_path):
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md")}
    for profile in PROFILES:
        settings = settings_for(base, profile)
        with PersonaStore.from_settings(settings) as store:
            seed(store, profile)
            store.add(f"{profile}: {'a long rule ' * 20}", topic="long")
            assert "a long rule" in run_pipeline(settings, store=store, dry_run=True)[0].text
    for profile in PROFILES:
        tight = settings_for(base, profile, **{"store.max_fact_chars": "150"})
        with PersonaStore.from_settings(tight) as store:
            warm, scratch = warm_and_from_scratch(store, tight)
        assert warm == scratch and "a long rule" not in warm and f"{profile} rule 0:" in warm
    settings = settings_for(base, "alice")
    with PersonaStore.from_settings(settings) as store:
        victim = next(fact for fact in store.list() if fact.content.startswith("alice rule 0:"))
        forget(settings, store, victim.id)
        assert "alice rule 0:" not in run_pipeline(settings, store=store, dry_run=True)[0].text
    with PersonaStore.from_settings(settings_for(base, "bob")) as store:
        assert "bob rule 0:" in run_pipeline(settings_for(base, "bob"), store=store, dry_run=True)[0].text


def test_the_kept_counts_follow_the_counter_and_leave_with_a_forget(tmp_path):
    """Whole texts' counts are kept by the counter's name and the text: a render under another counter counts
    again (its fit is its own), and a forget drops the counts with every cache that may hold a fact's text
    (``pipeline.caches``), every profile's: the other profile's next render keeps its own again."""
    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md"),
            "cap.token_cap": "300"}
    for profile in PROFILES:
        with PersonaStore.from_settings(settings_for(base, profile)) as store:
            seed(store, profile)
    for counter in ("o200k_base", "cl100k_base", "heuristic", "o200k_base"):
        for profile in PROFILES:
            settings = settings_for(base, profile, **{"cap.counter": counter})
            with PersonaStore.from_settings(settings) as store:
                warm, scratch = warm_and_from_scratch(store, settings)
                assert warm == scratch, (profile, counter)
                assert warm == run_pipeline(settings, store=store, dry_run=True)[0].text
    settings = settings_for(base, "alice")
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)
        scope = (store.label, "alice")
        assert "alice rule 0:" in repr(prepared.for_render(scope)._previous_counts)
        victim = next(fact for fact in store.list() if fact.content.startswith("alice rule 0:"))
        forget(settings, store, victim.id)
        assert "alice rule 0:" not in repr(prepared.for_render(scope)._previous_counts)
        bob = (store.label, "bob")
        assert prepared.for_render(bob)._previous_counts == {}
    with PersonaStore.from_settings(settings_for(base, "bob")) as store:
        run_pipeline(settings_for(base, "bob"), store=store)
    assert "bob rule 0:" in repr(prepared.for_render(bob)._previous_counts)


def test_kept_rows_give_the_facts_and_the_rank_a_read_and_a_full_rank_give(tmp_path, clock):
    """The facts extract gives from kept rows are those of the database's own read (ages as SQL computes them),
    and what a later stage sees of rank (each score and place, the duplicates, each topic's omitted count) is
    what rank gives without them, while the clock moves, with retention's decay on and off, near duplicates and
    topics cut short, for two profiles."""
    seen: list[tuple[FactSet, StageContext, RankedPersona | None]] = []

    @stage("facts_probe")
    def facts_probe(facts: FactSet, *, ctx: StageContext, options: NoOptions) -> FactSet:
        seen.append((facts, ctx, None))
        return facts

    @stage("rank_probe")
    def rank_probe(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> RankedPersona:
        seen.append((*seen.pop()[:2], ranked))
        return ranked

    base = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "{profile}.md"),
            "pipeline": ["extract", "facts_probe", "rank", "rank_probe", "render", "cap", "write"]}
    try:
        for profile in PROFILES:
            with PersonaStore.from_settings(settings_for(base, profile), clock=clock) as store:
                for index in range(150):  # 30 per topic: each topic's shortlist is cut
                    store.add(f"{profile} rule {index}: {'mind the details ' * (index % 4)}",
                              topic=f"topic {index % 5}", tier=("permanent", "long_term", "working")[index % 3],
                              confidence=0.3 + (index % 7) / 10)
        with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
            # near-duplicates of every fourth fact
            conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content, confidence) "
                         "SELECT session_id, tier, topic, content || '!', confidence FROM memoria_persona "
                         "WHERE id % 4 = 0")
            conn.execute("UPDATE memoria_persona SET reinforcement_count = id % 5, "
                         "last_reinforced_at = datetime('2026-05-10 12:00:00', '-' || (id % 40) || ' days')")
            conn.execute("UPDATE memoria_persona SET reinforcement_count = 2, confidence = 0.5, "  # equal scores
                         "last_reinforced_at = '2026-05-01 00:00:00' WHERE tier = 'permanent' AND id % 2 = 1")
        stores = {profile: PersonaStore.from_settings(settings_for(base, profile), clock=clock)
                  for profile in PROFILES}
        shown: dict[str, tuple[int, int]] = {}  # each profile's two strongest facts of its first section, at first
        for turn, (retention, steps, change) in enumerate(_turns()):
            for step in range(steps):  # the clock moves between renders, but not over another tool's changes
                if step:
                    clock.now += timedelta(days=9, seconds=7)
                for profile, store in stores.items():
                    settings = settings_for(base, profile, **{"retention.enabled": retention})
                    seen.clear()
                    run_pipeline(settings, store=store, dry_run=True, clock=clock)
                    facts, ctx, ranked = seen[0]
                    with store.read() as conn:
                        read = _persona_facts(store.render_rows(conn, to_db(clock.now)), store.max_fact_chars)
                    assert list(facts.facts) == read
                    full = get_stage("rank").func(facts, ctx=replace(ctx, cache={}), options=RankOptions())
                    assert ranked == full, (turn, profile, retention, clock.now)
                    assert ranked.duplicates_collapsed and any(s.omitted for s in ranked.sections)
                    top = ranked.sections[0].facts
                    shown.setdefault(profile, (int(top[0].fact.key[2:]), int(top[1].fact.key[2:])))
            # Another tool's few changes: the next renders read only these again (test_changed_rows.py), and rank
            # derives anew only what they changed where no row came or went; the facts and the rank must not tell.
            with closing(sqlite3.connect(tmp_path / "m.db")) as conn, conn:
                for statement in change:
                    for strongest, second in shown.values() if ":" in statement.split("WHERE")[-1] else [(0, 0)]:
                        conn.execute(statement, {"x": strongest, "z": second})
        for store in stores.values():
            store.close()
    finally:
        unregister("facts_probe")
        unregister("rank_probe")


def _turns() -> list[tuple[str, int, list[str]]]:
    """Each turn's retention, its renders (the clock moves between them, and a walk's result is reused only while
    the order by score stays: a turn of one render carries it on to the next), and the statements another tool
    runs after it. One whose WHERE names :x or :z runs for each profile, with the ids of its two strongest facts
    of its first section as the first turn ranked them. In place, with the same retention next, rank derives only
    the changed rows anew, and keeps the last walk's result where no fact's fate moves."""
    first = "WHERE id IN (SELECT MIN(id) + {} FROM memoria_persona GROUP BY session_id)"
    own = "UPDATE memoria_persona SET content = '{} rule of its own, number ' || id || '{}' WHERE id = {}"
    return [
        ("true", 3, [own.format("a", ".", ":x"), own.format("another", ".", ":z")]),  # texts of their own
        ("true", 3, [own.format("a", ", said again.", ":x")]),  # each fact's fate stays, and the walk's result
        # the second's text now a near-duplicate of the first's new text: the walk must see the first's new key
        ("true", 1, ["UPDATE memoria_persona SET content = (SELECT content || '!' FROM memoria_persona o WHERE "
                     "o.id = :x) WHERE id = :z"]),
        # and unlike any other again: what it collapsed into stands alone
        ("true", 3, ["UPDATE memoria_persona SET content = 'unlike any other rule, ' || id WHERE id = :z"]),
        # a text now a near-duplicate of another fact's
        ("true", 3, ["UPDATE memoria_persona SET content = (SELECT content || '!' FROM memoria_persona o WHERE "
                     "o.id = memoria_persona.id + 4) " + first.format(3)]),
        # confidences, one of a decaying long_term fact
        ("true", 3, ["UPDATE memoria_persona SET confidence = 0.95 " + first.format(4),
                     "UPDATE memoria_persona SET confidence = 0.31 " + first.format(1)]),
        # the order of ties (reinforcements, a tier) moves; retention changes too
        ("true", 3, ["UPDATE memoria_persona SET reinforcement_count = 9 " + first.format(8),
                     "UPDATE memoria_persona SET tier = 'long_term' " + first.format(6)]),
        ("false", 3, ["UPDATE memoria_persona SET topic = 'topic 2' " + first.format(10)]),  # a topic moves
        ("false", 3, ["DELETE FROM memoria_persona WHERE id IN (SELECT MAX(id) - 2 FROM memoria_persona GROUP BY "
                      "session_id)", "INSERT INTO memoria_persona (session_id, tier, topic, content, "
                      "reinforcement_count) VALUES ('bob', 'long_term', 'topic 1', 'bob rule new: mind the details', "
                      "3)"]),
        ("true", 3, []),
    ]
