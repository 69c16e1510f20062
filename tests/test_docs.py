"""The docs stay true: every command, setting and stage is documented, the generated references are current,
and every example marked runnable runs as written.

An example is marked by an HTML comment on the line before its fence, invisible on the site:
``<!-- example: run -->`` (shell, with `persona` on PATH), ``<!-- example: file NAME -->`` (written to the
working directory for the examples after it), ``<!-- example: config -->`` (YAML that must load as settings
and mean what it says), ``<!-- example: python -->`` and ``<!-- example: json -->`` (an MCP client entry).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from markdown.extensions.toc import slugify
from ruamel.yaml import YAML

import pipeline
from pipeline import Settings, load_settings
from pipeline.cli import app
from pipeline.config.edit import model_leaves
from pipeline.config.presets import PRESETS
from pipeline.config.sections import Section, TargetSettings
from pipeline.stages.registry import known_stages

from . import docs_reference
from .conftest import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
REFERENCE = DOCS / "reference"
EXAMPLE = re.compile(r"^<!-- example: (?P<kind>\w+)(?: (?P<name>\S+))? -->\n```\w*\n(?P<body>.*?)^```$",
                     re.MULTILINE | re.DOTALL)


def guides() -> list[Path]:
    """The hand-written pages: everything under docs/ but the generated references."""
    return sorted(path for path in DOCS.rglob("*.md") if REFERENCE not in path.parents)


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- generated references -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(docs_reference.PAGES))
def test_the_generated_reference_is_what_the_code_gives_now(name):
    committed = text(REFERENCE / name)
    assert committed == docs_reference.PAGES[name](), f"docs/reference/{name} is stale: run make reference"


def test_copies_we_keep_lists_every_declared_cache_as_the_registry_gives_it():
    """docs/architecture.md's table of caches is the registry's (``pipeline.caches.declared()``), row for row."""
    from pipeline import caches

    committed = text(docs_reference.ARCHITECTURE)
    assert committed == docs_reference.with_caches_table(committed), "the table of caches is stale: make reference"
    listed = re.findall(r"^\| `([\w.]+)` \| (?:process|settings|profile|run) \|", committed, re.MULTILINE)
    assert listed == [found.name for found in caches.declared()]


# -- commands, settings and stages are documented ---------------------------------------


def commands() -> Iterator[tuple[str, Any]]:
    root = typer.main.get_command(app)
    for path, command, context in docs_reference.walk_commands(root, typer.Context(root, info_name="persona")):
        yield path, command.get_params(context)


def test_every_command_and_option_has_help_and_a_guide_names_every_command():
    guide_text = "\n".join(text(path) for path in guides())
    for path, params in commands():
        assert f"`{path}" in guide_text, f"no page under docs/ names the command {path}"
        assert f"## `{path}`" in text(REFERENCE / "commands.md"), path
        for param in params:
            assert param.name == "help" or getattr(param, "help", None), f"{path}: {param.name} has no help"


def test_every_setting_has_a_description_and_a_row_in_the_reference():
    page = text(REFERENCE / "configuration.md")
    for path, _ in model_leaves(Settings()):
        key = ".".join(("targets", "NAME", *path[2:]) if path[0] == "targets" else path)  # names are the user's
        assert f"| `{key}` |" in page, f"the configuration reference lacks setting {key}"
    sections = [field.annotation for field in Settings.model_fields.values()
                if isinstance(field.annotation, type) and issubclass(field.annotation, Section)]
    for model in (Settings, *sections, TargetSettings):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"


def test_the_configuration_reference_shows_the_real_defaults():
    defaults = {".".join(path): value for path, value in model_leaves(Settings())}
    rows = re.findall(r"^\| `([a-z_.]+)` \| `([^`]*)`", text(REFERENCE / "configuration.md"), flags=re.MULTILINE)
    checked = 0
    for key, shown in rows:
        if key not in defaults:
            continue
        default = defaults[key]
        if isinstance(default, str | Path):
            assert shown == str(default), key
        else:
            assert YAML(typ="safe").load(shown) == default, key
        checked += 1
    assert checked >= 20


def test_every_builtin_stage_and_option_is_documented():
    rendering, reference = text(DOCS / "rendering.md"), text(REFERENCE / "configuration.md")
    for name, spec in known_stages().items():
        if not spec.origin.startswith(docs_reference.BUILT_IN):
            continue
        assert spec.doc, name
        assert f"| `{name}` |" in rendering, f"rendering.md lacks stage {name}"
        assert f"### `{name}`" in reference, f"the configuration reference lacks stage {name}"
        for option, field in spec.options.model_fields.items():
            assert field.description, f"{name}.{option}"
            assert f"`{option}`" in rendering, f"rendering.md lacks option {name}.{option}"


def test_the_host_presets_table_shows_the_real_budgets():
    rows = dict(re.findall(r"^\| `([a-z -]+)` \| .*? \| (\d+) \|", text(DOCS / "hosts.md"), flags=re.MULTILINE))
    rows = {name.replace(" --rules", "-rules"): budget for name, budget in rows.items()}  # claude-code --rules
    assert {name: int(budget) for name, budget in rows.items()} == {
        name: preset.budget for name, preset in PRESETS.items()}


def test_the_docs_python_imports_only_the_public_api():
    pages = [README, *guides()]
    imported = {name.strip() for page in pages for line in text(page).splitlines()
                if line.startswith("from pipeline import ")
                for name in line.removeprefix("from pipeline import ").split(",")}
    assert imported and imported <= set(pipeline.__all__)
    for page in pages:
        for example in examples(page):
            assert "from pipeline." not in example.body and "import pipeline." not in example.body, page.name


# -- the README and the site ------------------------------------------------------------


def test_the_readme_is_short_and_keeps_the_two_commands():
    readme = text(README)
    assert len(readme.splitlines()) <= 200
    assert ("```sh\nmake render    # set up .venv, import the example facts, render every target under var/demo/\n"
            "make test      # run the test suite") in readme
    assert re.search(r"^make test      # run the test suite, .*\(\d+ minutes measured .*\)\n```$", readme, re.M), \
        "the README says how long make test takes"


USER_EXTRAS = {"ui", "mcp", "postgres", "embed"}  # the extras a user may want; dev, docs, ui-test are ours


@pytest.mark.parametrize("page", [README, DOCS / "index.md"], ids=["README", "index"])
def test_the_install_section_names_pip_pipx_and_uv_and_the_extras_there_are(page):
    section = text(page).partition("## Installing it for everyday use")[2].partition("\n## ")[0]
    for command in ("pip install ./persona-tier", "pipx install ./persona-tier", "uv tool install ./persona-tier"):
        assert command in section, f"{page.name} does not say `{command}`"
    declared = tomllib.loads(text(REPO / "pyproject.toml"))["project"]["optional-dependencies"]
    named = set(re.findall(r"`(\w+)` for\s", section))
    assert named == USER_EXTRAS and named <= set(declared)


def test_every_link_in_the_readme_reaches_a_file_and_heading():
    for target in re.findall(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)", text(README)):
        path, anchor = target
        assert (REPO / path).is_file(), path
        if anchor:
            headings = re.findall(r"^#+ (.+)$", text(REPO / path), flags=re.MULTILINE)
            assert anchor in {slugify(heading.replace("`", ""), "-") for heading in headings}, f"{path}#{anchor}"


def test_where_a_new_feature_goes_names_only_files_that_exist():
    """docs/architecture.md's map of where a feature goes, and CONTRIBUTING.md, stay true as files move."""
    section = text(DOCS / "architecture.md").partition("## Where a new feature goes")[2]
    assert section, "docs/architecture.md has no 'Where a new feature goes' section"
    named = set(re.findall(r"`((?:pipeline|tests)/[\w/.]+)`", section))
    assert named
    assert sorted(path for path in named if "NAME" not in path and not (REPO / path).exists()) == []
    contributing = text(REPO / "CONTRIBUTING.md")
    assert "docs/architecture.md" in contributing and "make test" in contributing


def test_the_site_builds_with_no_broken_link_or_missing_page(tmp_path):
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=REPO, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").is_file()


# -- examples run as written --------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    kind: str
    name: str | None
    body: str


def examples(page: Path) -> list[Example]:
    return [Example(m["kind"], m["name"], m["body"]) for m in EXAMPLE.finditer(text(page))]


def example_env(tmp_path: Path) -> dict[str, str]:
    """A clean environment whose `persona` is this checkout's, and whose HOME is the test's own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "persona"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m pipeline "$@"\n')
    wrapper.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": os.environ["HOME"], "PYTHONPATH": str(REPO),
            "LANG": "C.UTF-8"}


def run_shell(example: Example, work: Path, env: dict[str, str]) -> str:
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", example.body], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{example.body}\n{done.stderr}"
    return done.stdout


def run_python(example: Example, work: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", example.body], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_file(example: Example, work: Path, env: dict[str, str]) -> str:
    assert example.name, "a file example names its file"
    (work / example.name).write_text(example.body, encoding="utf-8")
    return ""


def load_config(example: Example, work: Path, env: dict[str, str]) -> str:
    """The YAML loads as settings, and each value it sets is the value the settings hold."""
    config = work / "example-config.yaml"
    config.write_text(example.body, encoding="utf-8")
    settings = load_settings(config_files=[config])
    for path, value in yaml_leaves(YAML(typ="safe").load(example.body)):
        held = dig(settings, path)
        assert held == value or str(held) == str(value), f"{'.'.join(path)}: {held!r} != {value!r}"
    return ""


def check_mcp_entry(example: Example, work: Path, env: dict[str, str]) -> str:
    """An MCP client entry starts a `persona` command that exists."""
    servers = json.loads(example.body)["mcpServers"].values()
    root = typer.main.get_command(app)
    known = root.list_commands(typer.Context(root))  # type: ignore[attr-defined]
    assert servers and all(s["command"] == "persona" and s["args"][0] in known for s in servers)
    return ""


RUNNERS: dict[str, Callable[[Example, Path, dict[str, str]], str]] = {
    "run": run_shell, "python": run_python, "file": write_file, "config": load_config, "json": check_mcp_entry,
}


def yaml_leaves(data: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from yaml_leaves(value, (*path, str(key)))
    else:
        yield path, data


def dig(settings: Settings, path: tuple[str, ...]) -> Any:
    held: Any = settings
    for key in path:
        held = held[key] if isinstance(held, dict) else getattr(held, key)
    return held


def run_examples(page: Path, tmp_path: Path) -> str:
    """Every example of ``page`` in order, in one working directory; what they printed."""
    work = tmp_path / "work"
    work.mkdir()
    env = example_env(tmp_path)
    return "".join(RUNNERS[example.kind](example, work, env) for example in examples(page))


CHECKED_BY_NAME = {DOCS / "architecture.md"}  # its own test below also checks what it prints
def test_every_example_marker_is_read():
    """A marker the pattern misses (a typo, a blank line before the fence) would skip its example silently."""
    for page in [README, *guides()]:
        assert text(page).count("<!-- example:") == len(examples(page)), page.name


PAGES_WITH_EXAMPLES = [page for page in guides() if examples(page) and page not in CHECKED_BY_NAME]


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda page: page.name)
def test_every_example_on_a_page_runs_as_written(page, tmp_path):
    assert {example.kind for example in examples(page)} <= set(RUNNERS)
    run_examples(page, tmp_path)


def test_the_readme_quick_start_renders_and_injects_your_facts(tmp_path):
    printed = run_examples(README, tmp_path)
    persona_file = Path(os.environ["HOME"]) / ".hermes" / "memory" / "persona.md"
    assert "Never force-push; ask first." in persona_file.read_text(encoding="utf-8")
    injected = printed.partition("# L3 Persona (Active Behavioral Rules)\n")[2]  # what inject printed
    assert "Answers tersely." in injected and "Never force-push; ask first." in injected


def test_the_architecture_example_prints_the_prompt_with_its_fact(tmp_path):
    printed = run_examples(DOCS / "architecture.md", tmp_path)
    assert printed.startswith("You are a helpful agent.\n\n# L3 Persona (Active Behavioral Rules)\n")
    assert "Answers tersely." in printed
