"""One profile's persona never reaches another's: guards, file checks and the injector, after {profile} expands."""

from __future__ import annotations

import pytest

from pipeline import InputError, PersonaInjector, PersonaStore, load_settings, resolve_target, run_pipeline, tick
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call

from ..conftest import local_settings, runner

ALICE, BOB = "Alice is diabetic; remind her about insulin.", "Bob plays the cello."


def settings_for(tmp_path, database, **overrides):
    return local_settings(tmp_path, {"injection.enabled": True, **overrides}, database=database, persona="persona.md")


def test_a_new_owner_of_a_fixed_file_gets_their_own_persona_written(tmp_path, database):
    """The 'a newer render is already there' guard compares only the profile's own generations."""
    alice_settings = settings_for(tmp_path, database, **{"store.profile": "alice"})
    with PersonaStore.from_settings(alice_settings) as alice:
        for n in range(5):  # alice's generation runs well ahead of bob's
            alice.add(f"{ALICE} ({n})", topic="care")
        tick(alice_settings, store=alice, force=True)
    bob_settings = settings_for(tmp_path, database, **{"store.profile": "bob"})
    with PersonaStore.from_settings(bob_settings) as bob:
        bob.add(BOB, topic="music")
        result = tick(bob_settings, store=bob)
    assert result.rendered and not any(report.stale for report in result.reports)
    block = PersonaInjector(bob_settings).block()
    assert BOB in block and "Alice" not in block


def test_a_profile_whose_state_was_erased_renders_again(tmp_path, database):
    settings = settings_for(tmp_path, database, **{"store.profile": "alice"})
    with PersonaStore.from_settings(settings) as alice:
        for n in range(4):
            alice.add(f"{ALICE} ({n})", topic="care")
        tick(settings, store=alice, force=True)
    # Another tool erases alice's facts and state; her counter starts again below the old runs'.
    database.execute("DELETE FROM memoria_persona WHERE session_id = ?", ("alice",))
    database.execute("DELETE FROM persona_state WHERE session_id = ?", ("alice",))
    with PersonaStore.from_settings(settings) as alice:
        alice.add("Alice now walks to work.", topic="life")
        result = tick(settings, store=alice)
    assert result.rendered and not any(report.stale for report in result.reports)
    block = PersonaInjector(settings).block()
    assert "walks to work" in block and "insulin" not in block


@pytest.mark.parametrize("profile", ["export", "EXPORT"])
def test_a_profile_whose_file_name_is_another_targets_file_is_refused(tmp_path, database, profile):
    """persona-{profile}.md for user 'export' would be the fixed target's persona-export.md: the owner's facts."""
    settings = settings_for(tmp_path, database, **{
        "injection.file": str(tmp_path / "persona-{profile}.md"), "hermes.profile": "user_id",
        "targets.fixed.path": str(tmp_path / ("persona-export.md" if profile == "export" else "persona-EXPORT.md")),
        "targets.fixed.template": "persona.md.j2"})
    with PersonaStore.from_settings(settings) as owner:
        owner.add(ALICE, topic="care")
        tick(settings, store=owner, force=True)
    refused = r"target 'markdown' for profile '(export|EXPORT)' would use .* target 'fixed'"
    with pytest.raises(InputError, match=refused):
        resolve_target(settings, "markdown", profile=profile)
    with PersonaStore.from_settings(settings, profile="bob") as bob:  # an ordinary user is unaffected
        bob.add(BOB, topic="music")
        run_pipeline(settings, store=bob, targets=["markdown"])
    assert BOB in PersonaInjector(settings, profile="bob").block()


def test_inject_for_another_profile_never_shows_the_owners_file(tmp_path, database):
    from typer.testing import CliRunner

    from pipeline.cli import app

    runner = CliRunner()
    settings = settings_for(tmp_path, database)
    with PersonaStore.from_settings(settings) as owner, PersonaStore.from_settings(settings, profile="bob") as bob:
        owner.add(ALICE, topic="care")
        bob.add(BOB, topic="music")
        tick(settings, store=owner, force=True)
    where = [f"--set={key}={value}" for key, value in {**database.settings(), "injection.enabled": "true",
                                                        "injection.file": str(tmp_path / "persona.md")}.items()]
    as_owner = runner.invoke(app, [*where, "inject"])
    assert ALICE in as_owner.stdout
    as_bob = runner.invoke(app, [*where, "inject", "--profile", "bob"])
    assert as_bob.exit_code == 1 and "belongs to profile 'default'" in as_bob.stderr and "Alice" not in as_bob.stdout
    per_user = [*where[:-1], f"--set=injection.file={tmp_path / 'persona-{profile}.md'}"]
    with PersonaStore.from_settings(settings_for(tmp_path, database, **{
            "injection.file": str(tmp_path / "persona-{profile}.md")}), profile="bob") as bob:
        tick(settings_for(tmp_path, database, **{"injection.file": str(tmp_path / "persona-{profile}.md")}),
             store=bob, force=True)
    shown = runner.invoke(app, [*per_user, "inject", "--profile", "bob"])
    assert BOB in shown.stdout and "Alice" not in shown.stdout


# -- the CLI, the tools and tick: a fixed file belongs to one profile; {profile} gives each its own ----


def test_another_profile_needs_its_own_path(tmp_path, seeded):
    persona = tmp_path / "persona.md"
    assert runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "render"]).exit_code == 0
    before = persona.read_text()
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's secret rule.", "--topic", "bob", "--profile", "bob"])
    asked = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "render", "-p", "bob"])
    assert asked.exit_code == 1 and "belongs to profile 'default'" in asked.stderr and "{profile}" in asked.stderr
    # A tick renders what the profile has a file in, and warns about the rest with what to set: never exit 1.
    ticked = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "tick", "--force",
                                 "--profile", "bob"])
    assert ticked.exit_code == 0 and "not rendered for profile 'bob'" in ticked.stderr
    assert "put {profile} in injection.file" in ticked.stderr
    overrides = {"store.path": str(seeded), "injection.file": str(persona)}
    tools = PersonaTools(lambda: load_settings(overrides=overrides))
    with pytest.raises(InputError, match="belongs to profile 'default'"):
        call(tools.catalog(legacy=False), "persona_render", {"profile": "bob"})
    assert persona.read_text() == before and "Bob" not in before


def test_a_profile_path_gives_each_profile_its_own_file(tmp_path, seeded):
    pattern = str(tmp_path / "personas" / "{profile}.md")
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's rule.", "--topic", "bob", "--profile", "bob"])
    for session in ("default", "bob", "../../etc/x"):
        result = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={pattern}", "render",
                                     "--profile", session])
        assert result.exit_code == 0, result.stderr
    files = sorted(p.name for p in (tmp_path / "personas").iterdir() if p.suffix == ".md")
    assert files == ["..%2F..%2Fetc%2Fx.md", "bob.md", "default.md"]  # no profile climbs out of the directory
    assert "Bob" in (tmp_path / "personas" / "bob.md").read_text()
    assert "Bob" not in (tmp_path / "personas" / "default.md").read_text()


def test_tick_notices_a_file_another_profile_wrote(tmp_path, seeded):
    persona = tmp_path / "persona.md"
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's rule.", "--topic", "bob", "--profile", "bob"])
    as_bob = ["--db", str(seeded), "--set", f"injection.file={persona}", "--set", "store.profile=bob"]
    assert runner.invoke(app, [*as_bob, "render"]).exit_code == 0  # bob owned the file then
    status = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "status"]).stdout
    assert "last rendered for profile 'bob'" in status
    tick = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "tick"])
    assert tick.exit_code == 0 and "rendered" in tick.stdout
    assert "Bob" not in persona.read_text() and "Answers tersely." in persona.read_text()
