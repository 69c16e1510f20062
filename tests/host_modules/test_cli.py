"""The CLI is built from the registry: every preset can be added, and every help text lists every host."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.hosts import registry

runner = CliRunner()


@pytest.mark.parametrize("preset", registry.main_presets())
def test_targets_add_works_for_every_registered_preset(tmp_path, preset):
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    done = runner.invoke(app, ["-c", str(config), "targets", "add", preset, "--project", str(project)])
    assert done.exit_code == 0, done.output
    target = yaml.safe_load(config.read_text(encoding="utf-8"))["targets"][preset]
    declared = registry.presets()[preset]
    assert target["host"] == (declared.host_name or preset)
    assert target["path"] == str(project.resolve() / declared.project_file)


@pytest.mark.parametrize("host", sorted(registry.rules_variants()))
def test_rules_gives_the_hosts_rules_variant(tmp_path, host):
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  path: {tmp_path / 'm.db'}\n", encoding="utf-8")
    done = runner.invoke(app, ["-c", str(config), "targets", "add", host, "--rules", "--project", str(tmp_path)])
    assert done.exit_code == 0, done.output
    name = registry.rules_variants()[host]
    target = yaml.safe_load(config.read_text(encoding="utf-8"))["targets"][name]
    assert target["path"] == str(tmp_path.resolve() / registry.presets()[name].project_file)
    assert target["host"] == host


def test_help_lists_every_preset_and_every_host():
    add = runner.invoke(app, ["targets", "add", "--help"], terminal_width=500)
    assert add.exit_code == 0 and all(name in add.output for name in registry.main_presets())
    listing = runner.invoke(app, ["list", "--help"], terminal_width=500)
    assert f"<{'|'.join(registry.NAMES)}>" in listing.output
    hooks = runner.invoke(app, ["hooks", "install", "--help"], terminal_width=500)
    assert all(name in hooks.output for name in registry.hooks())


def test_a_host_the_registry_does_not_know_is_refused(tmp_path):
    done = runner.invoke(app, ["--set", f"store.path={tmp_path / 'm.db'}", "list", "--host", "vim"])
    assert done.exit_code != 0 and "vim" in done.output
