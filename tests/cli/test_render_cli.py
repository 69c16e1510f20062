"""`persona render` through the CLI runner, and `make render`'s config."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app

from ..conftest import REPO, write

runner = CliRunner()


def persona(tmp_path, *args):
    return runner.invoke(app, ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / 'p.md'}", *args])


def seed(tmp_path, content: str, topic: str) -> None:
    """A fact written through the store's API, which renders nothing (`persona add` renders at once)."""
    with PersonaStore(tmp_path / "m.db") as store:
        store.add(content, topic=topic)


def test_render_writes_and_reports(tmp_path):
    seed(tmp_path, "Answers tersely.", "style")
    result = persona(tmp_path, "render")
    assert result.exit_code == 0, result.stderr
    # Far inside its budget the render is not counted: its tokens are at most its UTF-8 length, shown as a bound.
    assert len((tmp_path / "p.md").read_bytes()) == 29
    assert result.stdout == f"markdown: 1 fact written, 0 left out, 1 section kept, 0 dropped, ≤29/1500 tokens -> " \
                            f"{tmp_path / 'p.md'} (written)\n"
    again = persona(tmp_path, "render")
    assert again.stdout.endswith("(unchanged)\n")


def test_render_json(tmp_path):
    seed(tmp_path, "x", "t")
    data = json.loads(persona(tmp_path, "render", "--json").stdout)
    assert data[0] | {"sha256": None} == {
        "target": "markdown", "path": str(tmp_path / "p.md"), "facts_extracted": 1, "facts_written": 1,
        "facts_left_out": 0, "sections_kept": 1,
        "sections_dropped": 0, "dropped_topics": [], "fitted_out": 0, "tokens": 10, "tokens_exact": False,
        "budget": 1500,
        "changed": True,
        "written": True, "stale": False, "sha256": None}


def test_render_counts_per_target_the_facts_written_and_left_out_as_explain_does(tmp_path):
    """Two projects' targets beside the injected file, over 20 global facts in one topic and a fact for each
    project: each target's summary says the facts its file holds (12 of a topic: max_items_per_section, and its
    project's) and the profile's others (the other project's, over the maximum), as `persona explain` counts."""
    shop, blog = (tmp_path / name for name in ("shop", "blog"))
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\ninjection:\n  file: {tmp_path / 'p.md'}\n")
    with PersonaStore(tmp_path / "m.db") as store:
        for index in range(20):
            store.add(f"Global habit number {index} of the user.", topic="habits")
    for project in (shop, blog):
        project.mkdir()
        cli = runner.invoke(app, ["-c", str(config), "add", f"Ships {project.name} on Thursdays.", "--topic",
                                  "release", "--project", str(project)])
        assert cli.exit_code == 0, cli.stderr
        runner.invoke(app, ["-c", str(config), "targets", "add", "gemini", "--project", str(project)])
    rendered = runner.invoke(app, ["-c", str(config), "render", "--json"])
    expected = {"markdown": (12, 10), "gemini": (13, 9), "gemini-blog": (13, 9)}
    reports = {report["target"]: report for report in json.loads(rendered.stdout)}
    assert {name: (r["facts_written"], r["facts_left_out"]) for name, r in reports.items()} == expected
    for name, (written, left) in expected.items():
        said = runner.invoke(app, ["-c", str(config), "render", "--target", name]).stdout
        assert f"{name}: {written} fact{'s' * (written != 1)} written, {left} left out," in said
        explained = runner.invoke(app, ["-c", str(config), "explain", "--target", name]).stdout
        assert f"{written} fact{'s' * (written != 1)} kept, {left} left out" in explained


def test_dry_run_and_stdout_write_nothing(tmp_path):
    seed(tmp_path, "x", "t")
    dry = persona(tmp_path, "render", "--dry-run")
    assert dry.stdout.endswith("(would change)\n") and not (tmp_path / "p.md").exists()
    shown = persona(tmp_path, "render", "--stdout")
    assert shown.stdout == "## t\n\n- x\n" and "would change" in shown.stderr
    assert not (tmp_path / "p.md").exists()


def test_diff_shows_the_change(tmp_path):
    persona(tmp_path, "add", "x", "--topic", "t")  # rendered at once
    seed(tmp_path, "y", "t")
    diff = persona(tmp_path, "render", "--diff", "--dry-run").stdout
    assert "+- y\n" in diff and "(on disk)" in diff


def test_unknown_target_is_exit_1(tmp_path):
    result = persona(tmp_path, "render", "--target", "html")
    assert result.exit_code == 1 and "unknown target 'html'; known targets: markdown" in result.stderr


def test_make_renders_demo_config_renders_every_target(tmp_path, monkeypatch):
    shutil.copytree(REPO / "config", tmp_path / "config")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "var" / "demo").mkdir(parents=True)
    args = ["-c", "config/demo.yaml"]
    imported = runner.invoke(app, [*args, "import", "--no-render", "config/facts.example.yaml"])  # as make render
    assert imported.exit_code == 0 and "rendered" not in imported.stdout
    assert not (tmp_path / "var" / "demo" / "persona.md").exists()  # left to the render: each target rendered once
    result = runner.invoke(app, [*args, "render", "--json"])
    reports = {r["target"]: r for r in json.loads(result.stdout)}
    assert set(reports) == {"markdown", "xml", "text", "json"}
    for report in reports.values():
        assert report["written"] and report["sections_dropped"] == 0
        assert (tmp_path / report["path"]).exists()
    injected = runner.invoke(app, [*args, "inject"]).stdout
    assert injected.startswith("# L3 Persona (Active Behavioral Rules)\n## communication\n")  # no blank lines first


def test_bad_stage_in_config_is_exit_1(tmp_path):
    config = write(tmp_path / "p.yaml", "pipeline: [extract, rnak, render, cap, write]\n")
    result = runner.invoke(app, ["-c", str(config), "--db", str(tmp_path / "m.db"), "render"])
    assert result.exit_code == 1 and "unknown stage 'rnak'" in result.stderr


def test_make_render_never_touches_a_real_persona_file(tmp_path):
    elsewhere = tmp_path / "real-persona.md"
    env = {**os.environ, "MNEMOSYNE_PERSONA_FILE": str(elsewhere), "HERMES_HOME": str(tmp_path / "hh"),
           "MNEMOSYNE_PERSONA_STORE__PATH": str(tmp_path / "real.db")}
    done = subprocess.run(["make", "-s", "render"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not elsewhere.exists() and not (tmp_path / "real.db").exists() and not (tmp_path / "hh").exists()
    assert (REPO / "var" / "demo" / "persona.md").exists()
    said = [line for line in done.stdout.splitlines() if " -> var/demo/" in line]
    assert len(said) == 4 and "rendered 4 targets" not in done.stdout  # each target rendered once, and said
    assert "WARNING" not in done.stderr and "deprecated" not in done.stderr  # a newcomer's first command is clean
