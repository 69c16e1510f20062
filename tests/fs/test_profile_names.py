"""Any profile name makes a usable, private path, and one profile never stops `tick --all-profiles` (issue 19, 8).

A profile id may have 1,000 characters; a file name only 255 bytes. ``{profile}`` expands through one
function (``pipeline.fs.locations.profile_slug``): a long id becomes a prefix, ``~`` and a hash, so two ids
that differ only after the cut still get two files. Whatever else goes wrong in one profile is one
line for that profile, and every other profile of the sweep is still ticked, wherever it started.
"""

from __future__ import annotations

import hashlib
import os
import random

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, load_settings, resolve_target, tick_all
from pipeline.cli import app

from ..conftest import local_settings

runner = CliRunner()
LONG = {
    "300": "a" * 300,
    "1000": "b" * 1000,
    "300, then x": "c" * 300 + "x",  # these two differ only after the cut
    "300, then y": "c" * 300 + "y",
    "long and odd": "é/../" * 200,  # every character escaped, then cut
}


def settings_for(database, tmp_path, **overrides):
    return local_settings(tmp_path, overrides, database=database, persona="persona-{profile}.md")


def add(settings, profile: str, content: str) -> None:
    with PersonaStore.from_settings(settings, profile=profile) as store:
        store.add(content, topic="t")


def fact_of(profile: str) -> str:
    return f"Rule of {hashlib.sha256(profile.encode()).hexdigest()[:12]}."


def file_of(settings, profile: str):
    return resolve_target(settings, "markdown", profile=profile).path


def test_long_profile_names_each_get_their_own_file_in_a_sweep(database, tmp_path):
    settings = settings_for(database, tmp_path)
    profiles = [*LONG.values(), "p8-bob"]
    for profile in profiles:
        add(settings, profile, fact_of(profile))
    ticks = tick_all(settings)
    assert {t.profile: t.outcome for t in ticks} == dict.fromkeys(profiles, "rendered"), [t.error for t in ticks]
    paths = {profile: file_of(settings, profile) for profile in profiles}
    assert len(set(paths.values())) == len(profiles)  # no two profiles share a file
    for profile, path in paths.items():
        assert path.parent == tmp_path and len(os.fsencode(path.name)) <= 255
        text = path.read_text()
        assert fact_of(profile) in text
        assert all(fact_of(other) not in text for other in profiles if other != profile)


def test_the_slug_keeps_the_existing_rules_and_a_cut_never_equals_another_name(tmp_path):
    settings = load_settings(overrides={"injection.file": str(tmp_path / "{profile}.md")})
    name = resolve_target(settings, "markdown", profile=LONG["300"]).path.name
    assert name.startswith("a" * 80) and "~" in name
    lookalike = name.removesuffix(".md")  # a profile literally named like another's cut slug
    assert resolve_target(settings, "markdown", profile=lookalike).path.name != name
    short = "d~1"  # an uncut slug escapes "~", so it can never look like a cut one
    assert resolve_target(settings, "markdown", profile=short).path.name == "d%7E1.md"
    for profile, expected in (("alice", "alice"), ("a b", "a%20b"), ("..", "%2E%2E"), ("../x", "..%2Fx"),
                              ("a" * 120, "a" * 120)):
        assert resolve_target(settings, "markdown", profile=profile).path.name == f"{expected}.md"
    assert "%C3" in resolve_target(settings, "markdown", profile=LONG["long and odd"]).path.name  # no half escape left


def test_a_profile_whose_render_fails_is_one_line_and_every_start_of_the_sweep_finishes(database, tmp_path):
    settings = settings_for(database, tmp_path)
    # Names of this file's own: tick locks on one server are shared by every schema (issue 19, 5), and other
    # tests on the same server tick an "alice" of their own.
    profiles = ["p8-alice", "p8-bob", "broken", LONG["1000"], "p8-zoe"]
    for profile in profiles:
        add(settings, profile, fact_of(profile))
    file_of(settings, "broken").mkdir()  # its persona file cannot be written: a directory is in the way
    starts = set()
    for seed in range(40):
        random.seed(seed)  # the sweep starts at a random profile; try each start
        ticks = tick_all(settings, force=True)
        starts.add(ticks[0].profile)
        outcomes = {t.profile: t.outcome for t in ticks}
        assert outcomes == {**dict.fromkeys(profiles, "rendered"), "broken": "failed"}
        failed = next(t for t in ticks if t.profile == "broken")
        assert "\n" not in failed.error and "directory" in failed.error, failed.error
    assert starts == set(profiles)
    for profile in set(profiles) - {"broken"}:
        assert fact_of(profile) in file_of(settings, profile).read_text()


def test_the_cli_sweep_reports_one_line_per_failed_profile_and_renders_the_rest(tmp_path):
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'persona-{profile}.md'}"]
    for profile in ("alice", LONG["300"], "broken"):  # the store's own writes: a CLI write would render them now
        add(local_settings(tmp_path, persona="persona-{profile}.md"), profile, fact_of(profile))
    (tmp_path / "persona-broken.md").mkdir()
    result = runner.invoke(app, [*base, "tick", "--all-profiles"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    lines = result.stdout.splitlines()
    assert sum(line.startswith("broken: failed (") for line in lines) == 1
    assert f"{LONG['300']}: rendered" in lines and "alice: rendered" in lines
    assert "3 profiles: 2 rendered, 0 nothing to do, 0 up to date, 0 busy, 1 failed" in lines


@pytest.mark.parametrize("command", [["render"], ["tick"], ["status"]])
def test_a_path_the_system_cannot_open_is_one_clear_error(tmp_path, command):
    too_long = tmp_path / ("x" * 250 + "-{profile}.md")  # too long for any profile, however it is cut
    base = ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={too_long}", "--profile", "alice"]
    runner.invoke(app, ["--db", str(tmp_path / "m.db"), "add", "Alice's rule.", "--topic", "t", "--profile", "alice"])
    result = runner.invoke(app, [*base[:4], *command, *base[4:]])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "longer than the system allows" in result.stderr and "shorten its path" in result.stderr
    assert list(tmp_path.glob("x*")) == []
