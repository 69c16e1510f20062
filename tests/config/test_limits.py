"""Limits in the host's own unit: a persona that overflows each unit a preset declares is cut at a section
boundary within every one of them (and the token budget) at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.render.tokens import get_counter

runner = CliRunner()
TOPICS = tuple(f"topic{n:02d}" for n in range(30))  # 12 facts each (rank.max_items_per_section)
# Each preset's file, and the limits its host documents (docs/hosts.md).
LIMITS = {
    "copilot": (".github/copilot-instructions.md", [("chars", 4000)]),
    "copilot-path": (".github/instructions/persona.instructions.md", [("chars", 4000)]),
    "codex": ("AGENTS.md", [("bytes", 32 * 1024)]),
    "windsurf": (".windsurf/rules/persona.md", [("chars", 6000), ("chars", 12_000)]),
}


def fact_text(topic: str, number: int) -> str:
    # Two bytes a character (é), many characters a token: bytes and characters overflow before tokens do.
    return f"Rule {number} of {topic}: préférence numéro {number} " + "é" * 60 + "."


@pytest.fixture
def store(tmp_path: Path) -> Path:
    facts = [(fact_text(topic, number), topic) for topic in TOPICS for number in range(12)]
    with PersonaStore(tmp_path / "m.db") as persona_store:
        for text, topic in facts:
            persona_store.add(text, topic=topic)
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\ninjection:\n  file: {tmp_path / 'persona.md'}\n",
                      encoding="utf-8")
    return config


def persona(config: Path, *args: str) -> str:
    result = runner.invoke(app, ["-c", str(config), *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def region_of(data: str) -> str:
    """Everything the host reads of ours: the region, its marker lines included (or the whole file we own)."""
    if "<!-- persona-tier:begin" not in data:
        return data
    start = data.index("<!-- persona-tier:begin")
    end = data.index("\n", data.index("<!-- persona-tier:end")) + 1
    return data[start:end]


def assert_whole_sections(text: str) -> None:
    """Every fact line is a whole fact, under its own topic's heading."""
    topic = None
    for line in text.splitlines():
        if line.startswith("## "):
            topic = line[3:]
        elif line.startswith("- "):
            assert topic is not None and line[2:].startswith("Rule ") and line.endswith("é."), line
            assert f" of {topic}: " in line


@pytest.mark.parametrize("preset", sorted(LIMITS))
@pytest.mark.parametrize("budget", [50_000, 300])  # the host's unit binds; then the tokens do
def test_a_persona_over_every_unit_is_cut_at_a_section_boundary_within_all(store, tmp_path, preset, budget):
    project = tmp_path / "project"
    project.mkdir()
    path, limits = LIMITS[preset]
    persona(store, "targets", "add", preset, "--project", str(project))
    persona(store, "--set", f"targets.{preset}.budget={budget}", "render", "-t", preset)
    ours = region_of((project / path).read_text(encoding="utf-8"))
    sizes = {"chars": len(ours), "bytes": len(ours.encode("utf-8")), "tokens": get_counter("o200k_base").count(ours)}
    for unit, amount in limits:
        assert sizes[unit] <= amount
    unit, amount = min(limits, key=lambda limit: limit[1])
    if budget > 1000:  # nothing but the host's tightest limit held it back: it is nearly full
        assert sizes[unit] > amount - 400
    body = ours.split("\n", 1)[1].rsplit("<!--", 1)[0] if ours.startswith("<!--") else ours
    assert get_counter("o200k_base").count(body) <= budget
    assert_whole_sections(body)
    assert "left out" in body  # the note says facts were left out, inside every limit
    assert body.count("\n## ") >= 2


def test_the_limits_a_preset_declares_are_in_the_users_config(store, tmp_path):
    persona(store, "targets", "add", "copilot", "--project", str(tmp_path))
    shown = json.loads(persona(store, "config", "show", "--json"))
    assert shown["targets"]["copilot"]["limits"] == [{"amount": 4000, "unit": "chars", "scope": "file"}]


def test_the_claude_code_hook_stays_under_its_characters(store, tmp_path):
    out = persona(store, "--set", "cap.token_cap=50000", "inject", "--format", "claude-code",
                  "--project", str(tmp_path))
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert 10_000 - 2_000 < len(context) <= 10_000  # whole sections of about 1,700 characters
    assert_whole_sections(context)
    small = json.loads(persona(store, "--set", "cap.token_cap=200", "inject", "--format", "claude-code",
                               "--project", str(tmp_path)))["hookSpecificOutput"]["additionalContext"]
    assert len(small) < 2000 and "\n## topic" in small  # the budget binds first: the cap as before
