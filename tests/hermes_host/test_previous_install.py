"""A Hermes home set up by the previous release keeps working with this one, with no reinstall.

The files below are byte for byte what `persona hermes install` wrote before the re-layout (0.1.0 at
commit c3a1f7b): the plugin stub imports pipeline.integrations.hermes_plugin by name, and the home's
persona.yaml still says store.session. Hermes' own PluginManager loads the directory, as `hermes chat`
does, and its llm_request middleware must carry the persona.

Run by `make test-hermes` (Hermes' venv).
"""

from __future__ import annotations

import json
import logging
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FACT, OTHER = "Never force-push; ask first.", "Someone else's rule."

# What the previous release wrote into $HERMES_HOME/plugins/persona/ (its PLUGIN_INIT, formatted).
OLD_INIT = '''"""persona-tier's Hermes plugin (written by `persona hermes install`), beside any memory provider."""

import sys

try:
    import pipeline  # noqa: F401
except ImportError:
    # Hermes runs in its own environment: find persona-tier where it was installed.
    for _path in {paths!r}:
        if _path not in sys.path:
            sys.path.append(_path)

from pipeline.integrations.hermes_plugin import register  # noqa: E402,F401
'''
OLD_YAML = """name: persona
version: "0.1.0"
kind: standalone
description: The L3 persona tier - durable behavioural facts about the user, pinned per session.
"""


@pytest.fixture
def old_home(tmp_path, monkeypatch):
    home = tmp_path / "hermes_home"
    plugin = home / "plugins" / "persona"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(OLD_INIT.format(paths=[str(REPO), sysconfig.get_paths()["purelib"]]))
    (plugin / "plugin.yaml").write_text(OLD_YAML)
    (plugin / "install.json").write_text(json.dumps({"mode": "plugin", "enabled": True}))
    (home / "config.yaml").write_text("plugins:\n  enabled:\n  - persona\n")
    (home / "mnemosyne").mkdir()
    # The old setting name, as an earlier home's config would have it.
    (home / "mnemosyne" / "persona.yaml").write_text("store:\n  session: default\n")
    (home / "memory").mkdir()
    (home / "memory" / "persona.md").write_text(f"## git\n\n- {FACT}\n")
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in [n for n in sys.modules if n == "pipeline" or n.startswith("pipeline.")]:
        monkeypatch.delitem(sys.modules, name)
    return home


def test_a_home_installed_by_the_previous_release_injects_without_a_reinstall(old_home, caplog):
    from hermes_cli.plugins import PluginManager

    manager = PluginManager()
    with caplog.at_level(logging.WARNING):
        manager.discover_and_load()
        assert manager.has_middleware("llm_request")
        request = {"messages": [{"role": "system", "content": "You are Hermes."}, {"role": "user", "content": "hi"}]}
        answers = manager.invoke_middleware("llm_request", request=request, session_id="s1",
                                            api_mode="chat_completions")
    changed = [answer for answer in answers if answer]
    assert len(changed) == 1
    system = changed[0]["request"]["messages"][0]["content"]
    assert system.startswith("You are Hermes.") and FACT in system and OTHER not in system
    assert "store.session" in caplog.text and "call it store.profile" in caplog.text  # read, with one warning
