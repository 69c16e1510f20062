"""The settings fingerprint counts only what changes the output, so the CLI and the Hermes plugin agree."""

from __future__ import annotations

import copy
import json

import pytest
from typer.testing import CliRunner

from pipeline import load_settings
from pipeline.cli import app
from pipeline.fs.locations import hermes_home_override
from pipeline.integrations.hermes_binding import hermes_settings
from pipeline.integrations.hermes_plugin import PersonaPlugin
from pipeline.stages.fingerprint import config_hash

from ..conftest import write
from ..support.hermes_threads import on_new_thread

runner = CliRunner()
CONFIG = "cap:\n  token_cap: 900\nstore:\n  busy_timeout_ms: 1500\n"


@pytest.fixture
def home(hermes_home):
    write(hermes_home / "mnemosyne" / "persona.yaml", CONFIG)
    return hermes_home


def cli_settings(home, **overrides):
    with hermes_home_override(home):
        return load_settings(overrides=overrides)


def persona(*args):
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def config_trigger(profile="default"):
    status = json.loads(persona("status", "--json", "--profile", profile))
    return next(t for t in status["triggers"] if t["name"] == "config_changed")


def test_plugin_style_settings_hash_like_the_cli(home):
    cli = cli_settings(home)
    plugin = hermes_settings(str(home))
    assert plugin.injection.enabled and plugin.injection.mode == "session" and not cli.injection.enabled
    assert config_hash(plugin) == config_hash(cli)
    quieter = cli_settings(home, **{"store.busy_timeout_ms": 9000, "injection.busy_timeout_ms": 10,
                                    "hermes.profile": "fixed", "triggers.interval": 3})
    assert config_hash(quieter) == config_hash(cli)


def test_what_changes_the_output_changes_the_hash(home):
    base = config_hash(cli_settings(home))
    for key, value in [("cap.token_cap", 901), ("targets.markdown.budget", 300), ("store.max_fact_chars", 99),
                       ("retention.half_life_days", 3.0), ("supersede.detect", "off"),
                       ("injection.file", str(home / "other.md")), ("pipeline", ["extract", "render", "write"])]:
        assert config_hash(cli_settings(home, **{key: value})) != base, key
    templates = home / "templates"
    write(templates / "persona.md.j2", "{{ sections | length }}\n")
    edited = cli_settings(home, **{"render.template_dirs": [str(templates)]})
    before = config_hash(edited)
    assert before != base
    write(templates / "persona.md.j2", "{{ sections | length }} sections\n")
    assert config_hash(edited) != before


def test_after_the_plugins_first_render_status_does_not_fire_config_changed(home):
    persona("add", "Answers tersely.", "--topic", "style")
    persona("add", "Only Bob's rule.", "--topic", "style", "--profile", "bob")
    plugin = PersonaPlugin()
    try:
        request = {"model": "m", "messages": [{"role": "system", "content": "You are Hermes."},
                                              {"role": "user", "content": "hi"}]}
        sent = on_new_thread(lambda: plugin.on_llm_request(request=copy.deepcopy(request), session_id="s1",
                                                           api_mode="chat_completions"))
    finally:
        plugin.close()
    system = sent["request"]["messages"][0]["content"]
    assert "Answers tersely." in system and "Bob" not in system
    trigger = config_trigger()
    assert trigger["fired"] is False, trigger
    write(home / "mnemosyne" / "persona.yaml", CONFIG.replace("900", "800"))
    assert config_trigger()["fired"] is True
