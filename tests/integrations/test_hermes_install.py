"""`persona hermes install | uninstall`: beside the user's memory provider by default, reversed exactly."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from pipeline.cli import app

from ..conftest import REPO, write

runner = CliRunner()
MNEMOSYNE_CONFIG = """\
# My Hermes settings
model: claude  # the usual
memory:
  # which external provider
  provider: mnemosyne
"""


def install(home: Path, *args: str):
    return runner.invoke(app, ["hermes", "install", "--hermes-home", str(home), *args])


def uninstall(home: Path):
    return runner.invoke(app, ["hermes", "uninstall", "--hermes-home", str(home)])


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text())


def import_plugin(plugin: Path):
    """Hermes' own discovery: import the directory's __init__.py."""
    spec = importlib.util.spec_from_file_location(f"hermes_plugin_{plugin.name}", plugin / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Ctx:
    """What Hermes hands register(): records what the plugin registers."""

    def __init__(self) -> None:
        self.middleware, self.tools, self.providers = [], {}, []

    def register_middleware(self, kind, callback):
        self.middleware.append((kind, callback))

    def register_tool(self, name, toolset, schema, handler, **kwargs):
        self.tools[name] = (toolset, schema, handler)

    def register_memory_provider(self, provider):
        self.providers.append(provider)


def test_beside_mnemosyne_the_provider_is_kept_and_the_plugin_enabled(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", MNEMOSYNE_CONFIG)
    result = install(home, "--activate")
    assert result.exit_code == 0, result.stderr
    assert "kept memory.provider: mnemosyne" in result.stdout and "hermes plugins list" in result.stdout
    config = load(home / "config.yaml")
    assert config["memory"]["provider"] == "mnemosyne" and config["plugins"]["enabled"] == ["persona"]
    plugin = home / "plugins" / "persona"
    init = (plugin / "__init__.py").read_text()
    # Hermes would take a file naming its provider API for an exclusive memory provider.
    assert "MemoryProvider" not in init and "register_memory_provider" not in init
    assert "kind: standalone" in (plugin / "plugin.yaml").read_text()
    ctx = Ctx()
    import_plugin(plugin).register(ctx)
    assert [kind for kind, _ in ctx.middleware] == ["llm_request"]
    assert set(ctx.tools) == {"persona_promote", "persona_demote", "persona_list", "persona_reinforce", "persona_add",
                              "persona_render", "persona_status", "persona_inject_preview",
                              "persona_session_refresh", "persona_replace", "persona_forget", "persona_review"}
    assert not any(name.startswith("mnemosyne_") for name in ctx.tools)  # Mnemosyne's names stay Mnemosyne's
    removed = uninstall(home)
    assert removed.exit_code == 0 and not plugin.exists()
    assert (home / "config.yaml").read_text() == MNEMOSYNE_CONFIG  # reversed exactly, comments and all


def test_other_enabled_plugins_are_left_alone(tmp_path):
    home = tmp_path / "hh"
    original = "plugins:\n  enabled:\n  - spotify  # music\n  - kanban\nmemory:\n  provider: honcho\n"
    write(home / "config.yaml", original)
    install(home, "--activate")
    assert load(home / "config.yaml")["plugins"]["enabled"] == ["spotify", "kanban", "persona"]
    install(home, "--activate")  # twice is safe
    assert load(home / "config.yaml")["plugins"]["enabled"] == ["spotify", "kanban", "persona"]
    uninstall(home)
    assert (home / "config.yaml").read_text() == original


def test_as_provider_refuses_to_switch_another_provider_off(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", MNEMOSYNE_CONFIG)
    result = install(home, "--activate", "--as-provider")
    assert result.exit_code == 1
    assert "memory.provider: mnemosyne" in result.stderr and "without --as-provider" in result.stderr
    assert (home / "config.yaml").read_text() == MNEMOSYNE_CONFIG
    assert not (home / "plugins" / "persona").exists()


def test_as_provider_with_none_selected_and_back(tmp_path):
    home = tmp_path / "hh"
    original = "# mine\nmodel: claude  # the usual\n"
    write(home / "config.yaml", original)
    result = install(home, "--activate", "--as-provider")
    assert result.exit_code == 0, result.stderr
    assert "memory.provider is now persona" in result.stdout and "hermes memory status" in result.stdout
    assert load(home / "config.yaml")["memory"] == {"provider": "persona"}
    init = (home / "plugins" / "persona" / "__init__.py").read_text()
    assert "MemoryProvider" in init[:8192]  # Hermes discovers providers by this
    ctx = Ctx()
    import_plugin(home / "plugins" / "persona").register(ctx)
    assert ctx.providers[0].name == "persona"
    uninstall(home)
    assert (home / "config.yaml").read_text() == original


def test_switching_modes_undoes_the_other_modes_edit(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", "model: claude\n")
    install(home, "--activate", "--as-provider")
    install(home, "--activate")
    config = load(home / "config.yaml")
    assert "memory" not in config and config["plugins"]["enabled"] == ["persona"]
    uninstall(home)
    assert (home / "config.yaml").read_text() == "model: claude\n"


def test_an_install_by_an_earlier_version_is_reversed_too(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", "memory:\n  provider: persona\n")
    write(home / "plugins" / "persona" / "previous-provider", "honcho")
    uninstall(home)
    assert load(home / "config.yaml") == {"memory": {"provider": "honcho"}}


def test_the_next_step_is_printed_when_the_store_is_empty(tmp_path):
    home = tmp_path / "hh"
    result = install(home, "--activate")
    assert "next: add facts" in result.stdout and "rendered on the first chat" in result.stdout
    runner.invoke(app, ["--db", str(tmp_path / "x.db"), "list"])
    with_facts = tmp_path / "hh2"
    env = {"HERMES_HOME": str(with_facts)}
    assert runner.invoke(app, ["add", "Answers tersely.", "--topic", "style"], env=env).exit_code == 0
    assert "next: add facts" not in install(with_facts, "--activate").stdout


@pytest.mark.parametrize("mode", ["user_id", "user_or_session_key"])
def test_with_a_per_user_profile_install_promises_no_persona_to_a_plain_chat(tmp_path, mode):
    home = tmp_path / "hh"
    write(home / "mnemosyne" / "persona.yaml", f"hermes:\n  profile: {mode}\n")
    said = install(home, "--activate").stdout
    assert "rendered on the first chat" not in said
    assert f"hermes.profile is {mode}: each user Hermes names" in said
    assert "a plain hermes chat (or cron) names" in said and "so it gets no persona" in said
    assert "--profile USER_ID" in said


def test_with_the_fixed_profile_install_promises_the_first_chat_its_persona(tmp_path):
    home = tmp_path / "hh"
    write(home / "mnemosyne" / "persona.yaml", "hermes:\n  profile: fixed\n")
    said = install(home, "--activate").stdout
    assert "the persona is rendered on the first chat" in said and "hermes.profile is" not in said


def test_install_uses_hermes_home_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "env-home"))
    assert runner.invoke(app, ["hermes", "install"]).exit_code == 0
    assert (tmp_path / "env-home" / "plugins" / "persona" / "__init__.py").exists()
    assert not (tmp_path / "env-home" / "config.yaml").exists()


def test_a_symlinked_config_is_edited_through_the_link(tmp_path):
    home, dotfiles = tmp_path / "hh", tmp_path / "dotfiles"
    real = write(dotfiles / "hermes.yaml", MNEMOSYNE_CONFIG)
    home.mkdir()
    (home / "config.yaml").symlink_to(real)
    install(home, "--activate")
    assert (home / "config.yaml").is_symlink()
    assert load(real)["plugins"]["enabled"] == ["persona"]
    uninstall(home)
    assert (home / "config.yaml").is_symlink() and real.read_text() == MNEMOSYNE_CONFIG


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_config_that_is_not_a_regular_file_is_refused_without_hanging(tmp_path, kind):
    home = tmp_path / "hh"
    home.mkdir()
    config = home / "config.yaml"
    os.mkfifo(config) if kind == "fifo" else config.mkdir()
    done = subprocess.run([sys.executable, "-m", "pipeline", "hermes", "install", "--hermes-home", str(home),
                           "--activate"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "not a regular file" in done.stderr or "cannot read" in done.stderr
    assert (config.is_fifo() if kind == "fifo" else config.is_dir())


def test_an_unwritable_hermes_home_is_one_clear_error(tmp_path):
    # Nothing, not even root, may create a directory under /proc.
    done = subprocess.run([sys.executable, "-m", "pipeline", "hermes", "install", "--hermes-home",
                           "/proc/persona-nowhere"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot write the Hermes plugin" in done.stderr


@pytest.mark.parametrize("original", [
    "memory:\n    provider: mnemosyne   # mine\nmodel:\n    default: claude\n",
    "memory:\r\n  provider: mnemosyne\r\nmodel: claude\r\n",
    "memory:\n  provider: mnemosyne",
    "plugins:\n  enabled: [ ]\nmemory:\n  provider: mnemosyne\n",
    "plugins:\n    enabled:\n        - spotify\nmemory:\n    provider: mnemosyne\n",
])
def test_uninstall_restores_config_yaml_byte_for_byte_in_any_style(tmp_path, original):
    home = tmp_path / "hh"
    home.mkdir()
    (home / "config.yaml").write_bytes(original.encode())
    install(home, "--activate")
    installed = (home / "config.yaml").read_bytes().decode()
    assert load(home / "config.yaml")["plugins"]["enabled"][-1] == "persona"
    assert ("\r\n" in installed) == ("\r\n" in original)  # the edit keeps the file's own style
    uninstall(home)
    assert (home / "config.yaml").read_bytes() == original.encode()


def test_uninstall_after_the_user_edited_the_config_undoes_only_our_edit(tmp_path):
    home = tmp_path / "hh"
    write(home / "config.yaml", MNEMOSYNE_CONFIG)
    install(home, "--activate")
    with (home / "config.yaml").open("a") as handle:
        handle.write("display:\n  theme: dark\n")
    uninstall(home)
    assert (home / "config.yaml").read_text() == MNEMOSYNE_CONFIG + "display:\n  theme: dark\n"


def test_a_plugin_the_user_disabled_is_enabled_and_disabled_again_at_uninstall(tmp_path):
    home = tmp_path / "hh"
    original = "plugins:\n  enabled: []\n  disabled:\n  - persona\nmemory:\n  provider: mnemosyne\n"
    write(home / "config.yaml", original)
    install(home, "--activate")
    config = load(home / "config.yaml")
    assert config["plugins"]["enabled"] == ["persona"] and "persona" not in (config["plugins"]["disabled"] or [])
    uninstall(home)
    assert (home / "config.yaml").read_text() == original


def test_install_without_a_config_and_uninstall_leave_no_config(tmp_path):
    home = tmp_path / "hh"
    install(home, "--activate")
    assert load(home / "config.yaml") == {"plugins": {"enabled": ["persona"]}}
    uninstall(home)
    assert not (home / "config.yaml").exists()


def test_the_sticky_hermes_profile_is_the_home_without_hermes_home(tmp_path):
    home = Path(os.environ["HOME"]) / ".hermes"
    (home / "profiles" / "work").mkdir(parents=True)
    (home / "active_profile").write_text("work\n")
    assert runner.invoke(app, ["add", "Uses uv.", "--topic", "tools"]).exit_code == 0
    assert (home / "profiles" / "work" / "mnemosyne" / "data" / "mnemosyne.db").exists()
    result = runner.invoke(app, ["hermes", "install", "--activate"])
    assert str(home / "profiles" / "work" / "plugins" / "persona") in result.stdout
    assert not (home / "mnemosyne").exists()
