"""What each agent sees: the exact text, the token budget and a bar for each limit the host's preset declares."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from typer.testing import CliRunner

from pipeline import PersonaStore
from pipeline.cli import app
from pipeline.cli.common import CliState
from pipeline.cli.host_checks import hook_deliveries
from pipeline.config.presets import PRESETS
from pipeline.fs.projects import project_of
from pipeline.stages.runner import run_pipeline
from pipeline.ui.pages import Bar, agent_views, facts_by_topic

from ..conftest import local_settings

TEMPLATES = Path(__file__).resolve().parents[2] / "pipeline" / "ui" / "templates"


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_each_limit_a_preset_writes_is_a_bar_in_its_unit_measured_as_the_cap_measures(tmp_path):
    targets = {name: PRESETS[name].target(name, tmp_path / name / PRESETS[name].project_file, tmp_path)
               for name in ("copilot", "codex")}
    settings = local_settings(tmp_path, {f"targets.{name}": target for name, target in targets.items()})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely; café, naïve, 日本語.", topic="style")
        views = {view.target: view for view in agent_views(settings, store)}
    copilot, codex = views["copilot"].bars, views["codex"].bars
    assert [(bar.unit, bar.limit) for bar in copilot] == [("tokens", 1000), ("characters", 4000)]
    assert copilot[1].used == len(views["copilot"].text)
    assert [(bar.unit, bar.limit) for bar in codex] == [("tokens", 2000), ("bytes (ours, of the whole chain)", 32768)]
    assert codex[1].used == len(views["codex"].text.encode()) > len(views["codex"].text)


def test_a_bar_says_how_full_and_whether_it_is_over():
    assert (Bar("tokens", 50, 200).percent, Bar("tokens", 50, 200).over) == (25, False)
    assert (Bar("bytes", 300, 200).percent, Bar("bytes", 300, 200).over) == (100, True)


def test_each_target_shows_its_exact_text_tokens_first_and_what_it_left_out(tmp_path):
    settings = local_settings(tmp_path, {"targets.codex": {"output": "region", "path": str(tmp_path / "AGENTS.md"),
                                                           "host": "codex", "budget": 45}})
    with PersonaStore.from_settings(settings) as store:
        for n in range(6):
            store.add(f"Fact number {n} about the user's habits.", topic=f"topic {n}")
        views = {view.target: view for view in agent_views(settings, store)}
    codex, markdown = views["codex"], views["markdown"]
    assert codex.host == "Codex" and markdown.host == "Hermes Agent (injected)"
    assert codex.bars[0].unit == "tokens" and codex.bars[0].limit == 45 and codex.bars[0].used <= 45
    assert {fact.fate for fact in codex.left_out} >= {"section dropped"}
    assert "Fact number" in codex.text and not (tmp_path / "AGENTS.md").exists(), "nothing is written"
    assert markdown.left_out == () and markdown.kept == 6


def test_the_facts_page_shows_one_topic_per_spelling_as_first_used(tmp_path):
    settings = local_settings(tmp_path)
    with PersonaStore.from_settings(settings) as store:
        store.add("Rebases, never merges.", topic="Git")
        store.add("Answers tersely.", topic="style")
        store.add("Signs every commit.", topic="git")
        topics = facts_by_topic(store)
    assert [(topic.name, [fact.content for fact in topic.facts]) for topic in topics] == [
        ("Git", ["Rebases, never merges.", "Signs every commit."]), ("style", ["Answers tersely."])]


def test_what_each_agent_sees_is_the_hosts_whole_load_set_in_each_project(tmp_path, monkeypatch):
    """#39: a project's Claude Code target is shown beside everything Claude Code loads in that project (the
    user-level CLAUDE.md of ours with the global facts, the project's file), per project; the template shows it."""
    home = Path.home()
    monkeypatch.chdir(tmp_path)  # the working directory is a project too, as for `persona targets check`
    write_text(home / ".claude" / "CLAUDE.md", "# Mine everywhere\n")
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    targets = {"claude-code-user": PRESETS["claude-code"].target("claude-code", home / ".claude" / "CLAUDE.md", None)}
    for project in (shop, blog):
        write_text(project / "CLAUDE.md", f"# The {project.name}\n")
        targets[f"claude-code-{project.name}"] = PRESETS["claude-code"].target(
            "claude-code", project / "CLAUDE.md", project)
    settings = local_settings(tmp_path, {f"targets.{name}": target for name, target in targets.items()})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        store.add("Ships the shop on Thursdays.", topic="release", scope=f"project:{project_of(shop).identity}")
        run_pipeline(settings, store=store)
        views = {view.target: view for view in agent_views(settings, store)}
    [load] = views["claude-code-shop"].loads
    assert load.project == shop.resolve() and load.problems == ()
    assert [(file.path, file.target) for file in load.files] == [
        ((home / ".claude" / "CLAUDE.md").resolve(), "claude-code-user"), ((shop / "CLAUDE.md").resolve(),
                                                                          "claude-code-shop")]
    assert [load.project for load in views["claude-code-user"].loads] == [
        shop.resolve(), blog.resolve(), tmp_path.resolve()]
    templates = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined)
    page = templates.get_template("agents.html.j2").render(
        agents=list(views.values()), csrf="x", csrf_field="", failure=None, generation=0, next="", note=None,
        poll_ms=1000, profile="default", page="agents", history=(), open_proposals=0)
    assert f"What Claude Code loads in {shop.resolve()}: each fact once" in page
    assert "Claude Code drops HTML comments (our region&#39;s markers)." in page


def test_the_page_shows_the_hook_beside_the_users_file_and_a_fact_arriving_twice(tmp_path, monkeypatch):
    """The SessionStart hook as `persona ui` reads it (the CLI's own reader), beside the user-level CLAUDE.md of
    ours: the page names both and says the fact would arrive twice, in the shop as in the blog."""
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(app, ["hooks", "install", "claude-code"]).exit_code == 0
    home = Path.home()
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    targets = {"claude-code": PRESETS["claude-code"].target("claude-code", home / ".claude" / "CLAUDE.md", None)}
    for project in (shop, blog):
        project.mkdir()
        targets[f"gemini-{project.name}"] = PRESETS["gemini"].target("gemini", project / "GEMINI.md", project)
    settings = local_settings(tmp_path, {f"targets.{name}": target for name, target in targets.items()})
    cli = CliState(_settings=settings)
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        run_pipeline(settings, store=store)
        views = agent_views(settings, store, lambda host, where: hook_deliveries(cli, None, host, where))
    [view] = [view for view in views if view.target == "claude-code"]
    assert [load.project for load in view.loads] == [shop.resolve(), blog.resolve(), tmp_path.resolve()]
    settings_file = home / ".claude" / "settings.json"
    for load in view.loads:
        assert [hook.label for hook in load.hooks] == [f"the SessionStart hook ({settings_file})"]
        assert load.problems == (f"1 fact would arrive twice: in {(home / '.claude' / 'CLAUDE.md').resolve()} "
                                 f"(target claude-code) and in the SessionStart hook ({settings_file})",)
