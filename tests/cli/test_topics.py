"""Issue 38 point 5: one spelling per topic. `Git` (a heading) and `git` (a facts file) are one topic and one
section, shown as first spelled or as topics.aliases says; `persona topics` lists them and renames or merges one,
as replaces with lineage that undo takes back."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import write

runner = CliRunner()


def persona(database, tmp_path, *args: str, config: str | None = None):
    pairs = [f"{key}={value}" for key, value in {**database.settings(),
                                                  "injection.file": str(tmp_path / "p.md")}.items()]
    files = ["--config", str(write(tmp_path / "aliases.yaml", config))] if config else []
    return runner.invoke(app, [*files, *(part for pair in pairs for part in ("--set", pair)), *args])


def seeded(database, tmp_path) -> None:
    """`Git` from an instruction file's heading first, then `git` from a facts file, and a topic of its own."""
    claude = write(tmp_path / "CLAUDE.md", "## Git\n\n- Rebases, never merges.\n")
    assert persona(database, tmp_path, "import", "--from", "instructions", str(claude)).exit_code == 0
    facts = write(tmp_path / "facts.yaml", "facts:\n  - {topic: git, content: Signs every commit.}\n"
                  "  - {topic: style, content: Answers tersely.}\n  - {topic: VCS, content: Uses jj at work.}\n")
    assert persona(database, tmp_path, "import", str(facts)).exit_code == 0


def sections(rendered: str) -> list[str]:
    return [line for line in rendered.splitlines() if line.startswith("## ")]


def test_two_spellings_render_as_one_section_in_the_first_spelling(database, tmp_path):
    seeded(database, tmp_path)
    shown = persona(database, tmp_path, "render", "--stdout")
    assert shown.exit_code == 0, shown.output
    assert sorted(sections(shown.stdout)) == ["## Git", "## VCS", "## style"]
    git = shown.stdout.split("## Git")[1].split("##")[0]
    assert "Rebases, never merges." in git and "Signs every commit." in git
    listed = persona(database, tmp_path, "list", "--topic", "GIT", "--json")
    assert sorted(fact["content"] for fact in json.loads(listed.stdout)) == ["Rebases, never merges.",
                                                                           "Signs every commit."]


def test_an_alias_names_a_topic_and_may_join_two(database, tmp_path):
    seeded(database, tmp_path)
    shown = persona(database, tmp_path, "render", "--stdout", config="topics:\n  aliases: {vcs: Version control, "
                    "GIT: Version control}\n")
    assert shown.exit_code == 0, shown.output
    assert sorted(sections(shown.stdout)) == ["## Version control", "## style"]
    assert "Uses jj at work." in shown.stdout.split("## Version control")[1]


def test_topics_lists_each_topic_once_with_its_count_and_spellings(database, tmp_path):
    seeded(database, tmp_path)
    listed = persona(database, tmp_path, "topics", "--json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == [{"topic": "Git", "count": 2, "spellings": ["Git", "git"]},
                                         {"topic": "style", "count": 1, "spellings": ["style"]},
                                         {"topic": "VCS", "count": 1, "spellings": ["VCS"]}]
    text = persona(database, tmp_path, "topics").stdout
    assert text.splitlines()[0].split() == ["TOPIC", "FACTS", "SPELLED"] and "Git, git" in text


def test_a_rename_onto_an_existing_topic_merges_with_lineage_and_undo_takes_it_back(database, tmp_path):
    seeded(database, tmp_path)
    done = persona(database, tmp_path, "topics", "rename", "vcs", "git", "--json")
    assert done.exit_code == 0, done.output
    moved = json.loads(done.stdout)
    assert (moved["old"], moved["new"], moved["merged"]) == ("vcs", "Git", 0)  # the existing topic's spelling
    [step] = moved["moved"]
    assert [t["topic"] for t in json.loads(persona(database, tmp_path, "topics", "--json").stdout)] == ["Git",
                                                                                                        "style"]
    history = json.loads(persona(database, tmp_path, "history", str(step["new"]), "--json").stdout)
    assert [link["id"] for link in history] == [step["old"], step["new"]]
    undone = persona(database, tmp_path, "undo-replace", str(step["old"]))
    assert undone.exit_code == 0, undone.output
    assert "VCS" in [t["topic"] for t in json.loads(persona(database, tmp_path, "topics", "--json").stdout)]


def test_a_respelling_moves_every_variant_and_a_fact_already_there_is_merged_not_copied(database, tmp_path):
    seeded(database, tmp_path)
    # The same text under another topic is already there (issue 50): one fact, not a second row.
    assert json.loads(persona(database, tmp_path, "add", "rebases, never merges", "--topic", "vcs",
                              "--json").stdout)["created"] is False
    done = persona(database, tmp_path, "topics", "rename", "git", "Git")
    assert done.exit_code == 0, done.output
    assert done.stdout.startswith("topic 'git' -> 'Git': 1 moved")
    merged = json.loads(persona(database, tmp_path, "topics", "rename", "VCS", "Git", "--json").stdout)
    assert (len(merged["moved"]), merged["merged"]) == (1, 0)  # "Uses jj at work." is copied
    assert json.loads(persona(database, tmp_path, "topics", "--json").stdout)[0] == {
        "topic": "Git", "count": 3, "spellings": ["Git"]}
    again = persona(database, tmp_path, "topics", "rename", "git", "Git")
    assert again.exit_code == 1 and "already spelled 'Git'" in again.stderr
    missing = persona(database, tmp_path, "topics", "rename", "nope", "Git")
    assert missing.exit_code == 1 and "no topic 'nope'" in missing.stderr
