"""`persona learn` (issue 53, point 1): what each host's model saved in its own memory (Hermes' USER.md, Gemini
CLI's ~/.gemini/GEMINI.md, Claude Code's auto memory per project) becomes a fact written by that host, scoped as the
host meant it, through the usual write rules; idempotent, never learning back a forgotten or replaced fact; a file
it cannot read is named with the reason and never stops a tick's render. Through the CLI (`persona learn`,
`persona tick`, `persona review`), both backends, two profiles, two projects."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, write

HOME_REGION = "<!-- persona-tier:begin profile=alice -->\n## style\n\n- Answers tersely.\n<!-- persona-tier:end " \
              "profile=alice -->\n"


def cli(database, tmp_path: Path, *args: str, settings: tuple[str, ...] = ()):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}",
            "--set", "injection.enabled=true"]
    for setting in settings:
        base += ["--set", setting]
    return CliRunner().invoke(app, [*base, *args])


def learned(database, tmp_path: Path, profile: str = "alice", *settings: str) -> dict:
    done = cli(database, tmp_path, "learn", "-p", profile, "--json", settings=settings)
    assert done.exit_code == 0, done.output
    return json.loads(done.output[:done.output.rindex("}") + 1])


def user_md(home: Path, *entries: str) -> Path:
    return write(home / ".hermes" / "memories" / "USER.md", "\n§\n".join(entries))


def facts(database, profile: str = "alice") -> dict[str, tuple[str | None, str | None]]:
    return {f.content: (f.writer, f.scope) for f in database.store(profile=profile).list()}


def test_hermes_entries_are_learned_once_and_a_forgotten_or_replaced_one_never_again(database, tmp_path):
    home = Path(os.environ["HOME"])
    user_md(home, "Prefers metric units.", "Has a dog named Pixel.")
    first = learned(database, tmp_path)
    assert len(first["added"]) == 2 and first["files"] == [str(home / ".hermes" / "memories" / "USER.md")]
    assert facts(database) == {"Prefers metric units.": ("learn:hermes", None),
                               "Has a dog named Pixel.": ("learn:hermes", None)}
    assert facts(database, "bob") == {}  # alice's learn is alice's
    assert learned(database, tmp_path)["added"] == []  # idempotent
    dog = next(f.id for f in database.store(profile="alice").list() if "Pixel" in f.content)
    units = next(f.id for f in database.store(profile="alice").list() if "metric" in f.content)
    assert cli(database, tmp_path, "forget", str(dog), "-p", "alice").exit_code == 0
    assert cli(database, tmp_path, "replace", str(units), "Prefers imperial units.", "-p", "alice").exit_code == 0
    user_md(home, "Prefers metric units.", "Has a dog named Pixel.", "Works from Lisbon.")
    again = learned(database, tmp_path)
    assert len(again["added"]) == 1
    assert set(facts(database)) == {"Prefers imperial units.", "Works from Lisbon."}
    bobs = learned(database, tmp_path, "bob")  # bob learns the same home's memory into his own profile
    assert len(bobs["added"]) == 3 and set(facts(database)) == {"Prefers imperial units.", "Works from Lisbon."}


def test_gemini_learns_only_the_lines_its_model_added_since_the_last_learn(database, tmp_path):
    home = Path(os.environ["HOME"])
    gemini_md = write(home / ".gemini" / "GEMINI.md", f"# Mine\n\n- Use 4 spaces.\n\n{HOME_REGION}")
    database.store(profile="alice").add("Is a vegetarian.", topic="food")
    assert learned(database, tmp_path)["added"] == []  # the user's own lines: init's to import, not learn's
    # Gemini CLI's model edits its global memory file with its own tools when told to remember.
    gemini_md.write_text(gemini_md.read_text() + "\n## Gemini Added Memories\n- Prefers metric units.\n"
                         "- Is a vegetarian\n")
    done = learned(database, tmp_path)
    assert len(done["added"]) == 1 and done["unchanged"] == 1
    assert facts(database)["Prefers metric units."] == ("learn:gemini", None)
    assert "Use 4 spaces." not in facts(database) and "Answers tersely." not in facts(database)


def repository(path: Path, remote: str) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def claude_memory(home: Path, project: Path, text: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    return write(home / ".claude" / "projects" / slug / "memory" / "MEMORY.md", text)


def test_claude_codes_project_memory_is_learned_into_its_project_and_an_unknown_one_is_named(database, tmp_path):
    home = Path(os.environ["HOME"])
    shop = repository(tmp_path / "work" / "my.shop", "git@github.com:acme/shop.git")
    blog = repository(tmp_path / "work" / "blog", "https://github.com/acme/blog")
    claude_memory(home, shop, "# Memory\n\n- [Testing](testing.md) runs the tests with tox, never pytest alone.\n")
    claude_memory(home, blog, "- Deploys with hugo.\n")
    gone = claude_memory(home, tmp_path / "moved" / "away", "- Uses make.\n")
    done = cli(database, tmp_path, "learn", "-p", "alice")
    assert done.exit_code == 0, done.output
    assert f"not learned from {gone}" in done.output and "no directory on this machine" in done.output
    learned_facts = facts(database)
    assert learned_facts["Deploys with hugo."] == ("learn:claude-code", "project:github.com/acme/blog")
    [shop_fact] = [text for text in learned_facts if "tox" in text]
    assert learned_facts[shop_fact] == ("learn:claude-code", "project:github.com/acme/shop")
    assert "Uses make." not in learned_facts and facts(database, "bob") == {}


def test_learn_approve_ask_holds_each_learned_fact_for_review(database, tmp_path):
    home = Path(os.environ["HOME"])
    user_md(home, "Prefers metric units.")
    done = learned(database, tmp_path, "alice", "learn.approve=ask")
    assert done["added"] == [] and done["held"] == ["w1"] and facts(database) == {}
    listed = cli(database, tmp_path, "review", "-p", "alice")
    assert "learn:hermes" in listed.output and "Prefers metric units." in listed.output
    assert learned(database, tmp_path, "alice", "learn.approve=ask")["held"] == []  # held once
    assert cli(database, tmp_path, "review", "accept", "w1", "-p", "alice").exit_code == 0
    assert facts(database) == {"Prefers metric units.": ("learn:hermes", None)}


def test_learn_hosts_chooses_the_hosts(database, tmp_path):
    home = Path(os.environ["HOME"])
    user_md(home, "Prefers metric units.")
    assert learned(database, tmp_path, "alice", "learn.hosts=[]")["files"] == []
    assert learned(database, tmp_path, "alice", "learn.hosts=[gemini]")["added"] == []
    assert len(learned(database, tmp_path, "alice", "learn.hosts=[hermes]")["added"]) == 1


def test_tick_learns_first_and_a_memory_file_it_cannot_read_never_stops_the_render(database, tmp_path):
    home = Path(os.environ["HOME"])
    user_md(home, "Prefers metric units.")
    (home / ".gemini").mkdir()
    (home / ".gemini" / "GEMINI.md").write_bytes(b"- caf\xe9 au lait\n")  # not UTF-8
    ticked = cli(database, tmp_path, "tick", "-p", "alice", "--force")
    assert ticked.exit_code == 0, ticked.output
    assert f"not learned from {home / '.gemini' / 'GEMINI.md'}" in ticked.output and "not UTF-8" in ticked.output
    assert "learned 1 new fact" in ticked.output
    assert "Prefers metric units." in (tmp_path / "p-alice.md").read_text()
    assert not (tmp_path / "p-bob.md").exists()


def test_tick_learns_by_default_and_not_with_on_tick_false(database, tmp_path):
    home = Path(os.environ["HOME"])
    user_md(home, "Prefers metric units.")
    ticked = cli(database, tmp_path, "tick", "-p", "alice", "--force", settings=("learn.on_tick=false",))
    assert ticked.exit_code == 0, ticked.output
    assert "learned" not in ticked.output
    assert "Prefers metric units." not in (tmp_path / "p-alice.md").read_text()
    ticked = cli(database, tmp_path, "tick", "-p", "bob", "--force")
    assert ticked.exit_code == 0 and "learned 1 new fact" in ticked.output, ticked.output
    assert "Prefers metric units." in (tmp_path / "p-bob.md").read_text()
    assert len(learned(database, tmp_path, "alice")["added"]) == 1  # `persona learn` still learns it


def test_gemini_project_memory_is_learned_into_the_project_its_index_names(database, tmp_path):
    home = Path(os.environ["HOME"])
    shop = repository(tmp_path / "code" / "shop", "git@github.com:acme/shop.git")
    blog = repository(tmp_path / "code" / "blog", "https://github.com/acme/blog")
    write(home / ".gemini" / "projects.json", json.dumps({"projects": {str(shop): "shop", str(blog): "blog-2"}}))
    write(home / ".gemini" / "tmp" / "shop" / "memory" / "MEMORY.md", "- Runs the shop's tests with tox.\n")
    write(home / ".gemini" / "tmp" / "blog-2" / "memory" / "MEMORY.md", "- Deploys the blog with hugo.\n")
    orphan = write(home / ".gemini" / "tmp" / "gone" / "memory" / "MEMORY.md", "- Uses make.\n")
    done = cli(database, tmp_path, "learn", "-p", "alice")
    assert done.exit_code == 0 and f"not learned from {orphan}" in done.output
    assert facts(database) == {"Runs the shop's tests with tox.": ("learn:gemini", "project:github.com/acme/shop"),
                               "Deploys the blog with hugo.": ("learn:gemini", "project:github.com/acme/blog")}


def test_every_hosts_memory_is_read_by_a_registered_import_format():
    from pipeline.hosts.registry import HOSTS, learners
    from pipeline.interchange.formats import known_formats

    assert learners() == ("hermes", "claude-code", "gemini")
    assert {memory.format for name in learners() for memory in HOSTS[name].memory} <= set(known_formats())
    assert all(memory.index for name in learners() for memory in HOSTS[name].memory if memory.project == "index")


def test_watch_learns_a_new_entry_between_its_ticks(tmp_path):
    """`persona watch` ticks in a loop for machines without cron: each tick learns first, as `persona tick` does."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    db, out = tmp_path / "m.db", tmp_path / "persona.md"
    with PersonaStore(db, profile="alice") as store:
        store.add("Answers tersely.", topic="style")
    proc = subprocess.Popen([sys.executable, "-m", "pipeline", "--db", str(db), "--set", f"injection.file={out}",
                             "--set", "store.profile=alice", "watch", "--every", "0.1"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        user_md(tmp_path, "Prefers metric units.")
        deadline = time.monotonic() + 60
        while not (out.exists() and "Prefers metric units." in out.read_text()):
            assert time.monotonic() < deadline, "watch never learned the entry"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    with PersonaStore(db, profile="bob") as bob:
        assert bob.list() == []  # alice's watch learns into alice's profile alone


def test_a_line_claude_codes_hash_added_to_the_users_claude_md_is_learned_and_a_projects_never(database, tmp_path):
    home = Path(os.environ["HOME"])
    mine = write(home / ".claude" / "CLAUDE.md", f"# Mine\n\n- Use 4 spaces.\n\n{HOME_REGION}")
    shop = repository(tmp_path / "work" / "shop", "git@github.com:acme/shop.git")
    team = write(shop / "CLAUDE.md", "- Run make check before a push.\n")
    assert learned(database, tmp_path)["added"] == []  # the user's own lines: init's to import, not learn's
    # `#` in a Claude Code prompt appends a line to the memory file the user picks.
    mine.write_text(mine.read_text() + "- Prefers metric units.\n")
    team.write_text(team.read_text() + "- Has a cat named Miso.\n")
    done = learned(database, tmp_path)
    assert len(done["added"]) == 1 and str(mine) in done["files"]
    assert facts(database) == {"Prefers metric units.": ("learn:claude-code", None)}
    assert facts(database, "bob") == {} and learned(database, tmp_path)["added"] == []
    # The user typed that line: a forget names the file and leaves every byte of it as it was.
    before = mine.read_text()
    [fact] = database.store(profile="alice").list()
    done = cli(database, tmp_path, "forget", "-p", "alice", str(fact.id))
    assert done.exit_code == 0, done.output
    assert mine.read_text() == before and str(mine) in done.output
