"""A profile other than store.profile, beside a target whose one file is store.profile's: every committed change is
reported as done, that target is a warning with what to set, and the targets the profile has a file in render."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline import PersonaInjector, PersonaStore, load_settings
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json

from ..conftest import runner

SECRET = "Alice's locker code is 4417."


def persona(db: Path, shared: Path, *args: str):
    return runner.invoke(app, ["--db", str(db), "--set", f"injection.file={shared}", *args])


def test_forget_for_another_profile_reports_the_erasure_and_warns_with_what_to_set(tmp_path):
    db, shared = tmp_path / "m.db", tmp_path / "persona.md"
    assert persona(db, shared, "add", "Default answers tersely.", "--topic", "style").exit_code == 0
    added = persona(db, shared, "add", SECRET, "--topic", "care", "-p", "alice", "--json")
    fact_id = json.loads(added.stdout)["fact"]["id"]
    forgot = persona(db, shared, "forget", str(fact_id), "-p", "alice")
    assert forgot.exit_code == 0, forgot.output
    assert forgot.stdout.startswith(f"forgot #{fact_id}")
    assert "not rendered for profile 'alice'" in forgot.stderr and "put {profile} in injection.file" in forgot.stderr
    assert "Traceback" not in forgot.output and "error:" not in forgot.stderr
    again = persona(db, shared, "forget", str(fact_id), "-p", "alice")  # it is gone: the first forget did it
    assert again.exit_code == 1 and "no persona fact" in again.stderr
    data = json.loads(persona(db, shared, "forget", "--json", "-p", "bob", str(_add(db, shared, "bob"))).stdout)
    assert data["render_warnings"] and "{profile}" in data["render_warnings"][0]
    assert "Alice" not in shared.read_text() and "Bob" not in shared.read_text()  # the owner's file stays the owner's


def _add(db: Path, shared: Path, profile: str) -> int:
    return int(json.loads(persona(db, shared, "add", "Bob plays the cello.", "--topic", "music", "-p", profile,
                                  "--json").stdout)["fact"]["id"])


def test_tick_for_another_profile_renders_its_own_files_and_warns_about_the_shared_one(tmp_path):
    db, shared, own = tmp_path / "m.db", tmp_path / "shared.md", tmp_path / "persona-{profile}.md"
    base = ["--db", str(db), "--set", f"injection.file={own}", "--set", f"targets.shared.path={shared}",
            "--set", "targets.shared.template=persona.md.j2"]
    runner.invoke(app, [*base, "add", "Bob plays the cello.", "--topic", "music", "-p", "bob"])
    ticked = runner.invoke(app, [*base, "tick", "--force", "-p", "bob"])
    assert ticked.exit_code == 0, ticked.output
    assert "Bob plays the cello." in (tmp_path / "persona-bob.md").read_text()
    assert ticked.stderr.count("warning:") == 1
    assert "target 'shared' was not rendered for profile 'bob'" in ticked.stderr
    assert "put {profile} in targets.shared.path" in ticked.stderr
    assert not shared.exists()
    data = json.loads(runner.invoke(app, [*base, "tick", "--force", "-p", "bob", "--json"]).stdout)
    assert [report["target"] for report in data["reports"]] == ["markdown"] and len(data["skipped"]) == 1


def test_render_before_read_for_another_profile_renders_the_files_it_has(tmp_path):
    """A host's prompt for bob renders bob's own file first, though a shared target belongs to the owner."""
    own, shared = tmp_path / "persona-{profile}.md", tmp_path / "shared.md"
    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"), "injection.enabled": True,
                                        "injection.file": str(own), "targets.shared.path": str(shared),
                                        "targets.shared.template": "persona.md.j2"})
    for profile, text in (("bob", "Bob plays the cello."), ("carol", "Carol sails on Sundays.")):
        with PersonaStore.from_settings(settings, profile=profile) as store:
            store.add(text, topic="hobby")  # the Python API renders nothing itself: the read must
    bob = PersonaInjector(settings, profile="bob").block()
    carol = PersonaInjector(settings, profile="carol").block()
    assert "Bob plays the cello." in bob and "Carol" not in bob
    assert "Carol sails on Sundays." in carol and "Bob" not in carol
    assert not shared.exists()


def test_the_forget_tool_for_another_profile_answers_done_with_the_warning(tmp_path):
    overrides = {"store.path": str(tmp_path / "m.db"), "injection.file": str(tmp_path / "persona.md")}
    tools = PersonaTools(lambda: load_settings(overrides=overrides))
    catalog = tools.catalog(legacy=False)
    added = json.loads(call_json(catalog, "persona_add", {"content": SECRET, "topic": "care", "profile": "alice"}))
    assert added["render_warnings"] and "{profile}" in added["render_warnings"][0]
    done = json.loads(call_json(catalog, "persona_forget", {"persona_id": added["fact"]["id"], "profile": "alice"}))
    assert done["status"] != "error" and done["render_warnings"], done
    again = json.loads(call_json(catalog, "persona_forget", {"persona_id": added["fact"]["id"], "profile": "alice"}))
    assert again["status"] == "error" and "no persona fact" in again["error"]
