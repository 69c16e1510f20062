"""What a command loads: each command builds only itself, and the hot commands leave out what they do not use."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from ruamel.yaml import YAML

from pipeline import PersonaStore, load_settings, run_pipeline
from pipeline.cli import PersonaCli, app
from pipeline.cli.lazy import registered
from pipeline.config.files import parse_value

from ..conftest import REPO

LOADED = """
import sys
from pipeline.cli import app
try:
    app(sys.argv[1:], prog_name="persona")
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""
HEAVY = ("pydantic", "pipeline.config.schema", "pipeline.store", "toktok", "ruamel.yaml", "filelock", "jinja2",
         "asyncio", "pipeline.stages.registry", "pipeline.render.model")


def loaded_by(home: Path, *args: str) -> set[str]:
    """The modules a real `persona ARGS` process imported, run as a user runs it with HOME=``home``."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", LOADED, *args], capture_output=True, text=True, env=env,
                          timeout=120, check=True)
    return set(done.stderr.strip().splitlines()[-1].split())


def test_every_module_registers_exactly_the_commands_the_table_gives_it():
    for module in set(PersonaCli.modules.values()):
        given = {name for name, owner in PersonaCli.modules.items() if owner == module}
        assert set(registered(module)) == given, f"pipeline/cli/{module}.py: add its commands to PersonaCli.modules"


def test_the_list_of_commands_says_what_each_built_command_says():
    root = typer.main.get_command(app)
    context = typer.Context(root, info_name="persona")
    listed = root.get_help(context).split("Commands:\n")[1].splitlines()
    built = [root.get_command(context, name) for name in root.list_commands(context)]
    limit = context.make_formatter().width - 6 - max(len(command.name) for command in built)
    assert [line.split()[0] for line in listed] == [command.name for command in built]
    for line, command in zip(listed, built, strict=True):
        assert line.split(None, 1)[1] == command.get_short_help_str(limit), command.name


def test_help_loads_no_settings_store_or_tokenizer(tmp_path):
    loaded = loaded_by(tmp_path, "--help")
    assert not {module for module in loaded if module.startswith(HEAVY)}


@pytest.fixture
def rendered_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose default database holds facts, rendered: what `persona status` and `persona inject` find."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    settings = load_settings()
    assert settings.store.path.is_relative_to(tmp_path)
    settings.store.path.parent.mkdir(parents=True)
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        run_pipeline(settings, store=store)
    return tmp_path


@pytest.mark.parametrize("command", [["status"], ["--set", "injection.enabled=true", "inject"]])
def test_status_and_inject_load_no_tokenizer_yaml_lock_library_or_render_pipeline(rendered_home, command):
    loaded = loaded_by(rendered_home, *command)
    assert "pipeline.config.schema" in loaded  # they do read the settings
    heavy = {"toktok", "ruamel.yaml", "filelock", "jinja2", "asyncio", "pipeline.stages.registry", "Stemmer",
             "rapidfuzz", "pipeline.store.supersede_rules"}
    assert not loaded & heavy


def test_the_proposal_checks_libraries_load_on_the_write_path(rendered_home):
    """PyStemmer and rapidfuzz are the detector's (issue 38): a write loads them (rapidfuzz only when a pair needs
    it), a read (above) does not."""
    loaded = loaded_by(rendered_home, "add", "Answers tersely; no summary of what was just said.", "--topic", "style")
    assert {"Stemmer", "pipeline.store.supersede_rules", "pipeline.store.near_duplicates"} <= loaded


@pytest.mark.parametrize("raw", ["true", "false", "0", "-0", "7", "-12", "123456789012345678", "007", "+1", "1_000",
                                 "1e3", "0x1F", "True", "yes", "null", "~", "word", "1.5", "-", "0o7"])
def test_a_set_value_reads_as_yaml_reads_it(raw):
    assert parse_value(raw) == YAML(typ="safe", pure=True).load(raw)
