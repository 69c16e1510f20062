"""Fuzzing the CLI parser and the settings loader: success or one of our typed errors, never a traceback."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.config_edit import model_leaves
from pipeline.errors import PersonaError
from pipeline.settings import LEGACY_ENV, Settings, load_settings

KEYS = [".".join(path) for path, _ in model_leaves(Settings())]
COMMANDS = [["add"], ["promote"], ["demote"], ["list"], ["reinforce"], ["import"], ["render"], ["inject"],
            ["status"], ["tick"], ["retention"], ["config", "show"], ["config", "set"], ["config", "init"],
            ["session", "show"], ["session", "compact"], ["session", "list"], ["session", "forget"],
            ["hermes", "install"], ["hermes", "uninstall"]]
WORDS = ["--json", "--tier", "--topic", "--reason", "--force", "--dry-run", "--stdout", "--diff", "--target",
         "--session", "--confidence", "--prune", "--sources", "--file", "--activate", "--set", "permanent",
         "long_term", "working", "bogus", "1", "0", "-5", "99", "1.5", "", "markdown", "x=y", "cap.token_cap=7",
         "facts.yaml", "missing.yaml", "m1", "\x1b[31m", "日本語", "--", "-"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                    st.text(max_size=20), st.sampled_from(["true", "enabled", "1500 tokens", "@format {env}", "~"]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), words=st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=8)),
                                                         max_size=6))
def test_cli_never_shows_a_traceback(command, words):
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)  # `config init PATH` and friends write relative paths here, never in the repo
        os.environ["HERMES_HOME"] = str(Path(tmp) / "hermes")
        try:
            Path("facts.yaml").write_text("- {topic: t, content: c}\n")
            base = ["--db", str(Path(tmp) / "m.db"), "--set", f"injection.file={Path(tmp) / 'p.md'}"]
            result = CliRunner().invoke(app, [*base, *command, *words])
        finally:
            os.chdir(cwd)
            del os.environ["HERMES_HOME"]
    assert result.exit_code in (0, 1, 2), (command, words, result.output)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), (command, words, repr(result.exception))
    assert "Traceback" not in result.output


def nested(keys: list[str], values: list) -> dict:
    document: dict = {}
    for key, value in zip(keys, values, strict=False):
        node = document
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[parts[-1]] = value
    return document


key_names = st.one_of(st.sampled_from(KEYS), st.sampled_from(["cap.tokn_cap", "CAP.token_cap", "default",
                                                              "targets.x.template", "pipeline", "nope"]),
                      st.text(min_size=1, max_size=10))


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(key_names, max_size=8), values=st.lists(scalars, min_size=8, max_size=8),
       env=st.dictionaries(st.sampled_from([*LEGACY_ENV, "MNEMOSYNE_PERSONA_CAP__TOKEN_CAP",
                                            "MNEMOSYNE_PERSONA_INJECTION__MODE", "MNEMOSYNE_PERSONA_BOGUS",
                                            "MNEMOSYNE_PERSONA_TARGETS", "MNEMOSYNE_ENV"]),
                           st.text(max_size=12).filter(lambda v: "\x00" not in v), max_size=4))
def test_settings_loader_raises_only_config_errors(keys, values, env):
    buffer = io.StringIO()
    YAML(typ="safe", pure=True).dump(nested(keys, values), buffer)
    _load(buffer.getvalue(), env)


@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=200))
def test_garbage_yaml_raises_only_config_errors(text):
    _load(text, {})


def _load(text: str, env: dict[str, str]) -> None:
    saved = {name: os.environ.get(name) for name in env}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "persona.yaml"
        path.write_text(text, encoding="utf-8")
        os.environ.update(env)
        try:
            load_settings(config_files=[path])
        except PersonaError:
            pass
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
