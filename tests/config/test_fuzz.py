"""Fuzzing the CLI parser and the settings loader: success or one of our typed errors, never a traceback."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from typer.testing import CliRunner

from pipeline import PersonaError, Settings, load_settings
from pipeline.cli import app
from pipeline.config.edit import model_leaves
from pipeline.config.env import LEGACY_ENV

KEYS = [".".join(path) for path, _ in model_leaves(Settings())]
COMMANDS = [["add"], ["promote"], ["demote"], ["list"], ["reinforce"], ["import"], ["render"], ["inject"],
            ["status"], ["tick"], ["retention"], ["config", "show"], ["config", "set"], ["config", "init"],
            ["session", "show"], ["session", "compact"], ["session", "list"], ["session", "delete"],
            ["session", "forget"],
            ["hermes", "install"], ["hermes", "uninstall"], ["adopt"], ["init"]]
WORDS = ["--json", "--tier", "--topic", "--reason", "--force", "--dry-run", "--stdout", "--diff", "--target",
         "--profile", "--confidence", "--prune", "--sources", "--file", "--activate", "--set", "permanent",
         "long_term", "working", "bogus", "1", "0", "-5", "99", "1.5", "", "markdown", "x=y", "cap.token_cap=7",
         "facts.yaml", "missing.yaml", "m1", "\x1b[31m", "日本語", "--", "-", "--from", "persona-md", "hermes",
         "instructions", "lines", "mem0", "--skip-bad", "--accept-notes", "--yes", "p.md"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                    st.text(max_size=20), st.sampled_from(["true", "enabled", "1500 tokens", "@format {env}", "~"]))


@pytest.mark.slow
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


# -- YAML from the building blocks of hostile files: depth, anchors and aliases, tags, types --------------

def _nest(depth: int, style: str, leaf: str) -> str:
    if style == "flow-list":
        return "[" * depth + leaf + "]" * depth
    if style == "flow-map":
        return "{a: " * depth + leaf + "}" * depth
    return ("- " * depth) + leaf


yaml_leaves = st.sampled_from(["1", "x", "~", "!!binary aGVsbG8=", "!!timestamp 2001-12-14", "!!set {a, b}",
                               "!!python/object:os.system x", "&anchor v", "*anchor", "!!float .nan", "!!int 0x1F",
                               "'quoted [ { # not nested'", "\"\\u0000\"", "? complex", "<<: *anchor"])


@st.composite
def hostile_yaml(draw: st.DrawFn) -> str:
    lines = []
    names = []
    for index in range(draw(st.integers(0, 6))):
        name = f"a{index}"
        body = ",".join(f"*{draw(st.sampled_from(names))}" for _ in range(draw(st.integers(1, 9)))) if names \
            else ",".join(['"x"'] * draw(st.integers(1, 9)))
        lines.append(f"k{index}: &{name} [{body}]")
        names.append(name)
    depth = draw(st.integers(0, 300))
    style = draw(st.sampled_from(["flow-list", "flow-map", "dashes"]))
    lines.append(f"deep: {_nest(depth, style, draw(yaml_leaves))}" if style != "dashes"
                 else "deep:\n  " + _nest(depth, style, draw(yaml_leaves)))
    lines.append(f"facts: {draw(st.sampled_from(['[]', '[{topic: t, content: c}]', '*a0', '~', '- x']))}")
    return "\n".join(draw(st.permutations(lines)))


@settings(max_examples=120, deadline=None)
@given(text=hostile_yaml())
def test_hostile_yaml_is_only_ever_a_typed_error_in_every_reader(text):
    from pipeline import read_facts_file
    from pipeline.integrations.hermes_install import install_plugin

    _load(text, {})
    with tempfile.TemporaryDirectory() as tmp:
        facts = Path(tmp) / "facts.yaml"
        facts.write_text(text, encoding="utf-8")
        with contextlib.suppress(PersonaError):
            read_facts_file(facts)
        home = Path(tmp) / "hermes"
        home.mkdir()
        (home / "config.yaml").write_text(text, encoding="utf-8")
        try:
            install_plugin(home, activate=True)
        except PersonaError:
            assert (home / "config.yaml").read_text(encoding="utf-8") == text  # refused: left as it was


# -- rows another tool wrote: any value the schema allows ----------------------------------------------------

any_value = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=True),
                      st.text(max_size=30), st.binary(max_size=12), st.just("x" * 5000))


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.fixed_dictionaries({
    "tier": st.sampled_from(["permanent", "long_term", "working"]),
    "topic": any_value.filter(lambda v: v is not None and v == v),  # NOT NULL (and SQLite stores NaN as NULL)
    "content": any_value.filter(lambda v: v is not None and v == v),
    "confidence": any_value, "reinforcement_count": any_value, "source_memory_id": any_value,
    "created_at": any_value, "last_reinforced_at": any_value, "promotion_reason": any_value,
}), min_size=1, max_size=6))
def test_rows_any_tool_could_write_never_break_a_read(rows):
    import sqlite3
    from contextlib import closing

    from pipeline import PersonaStore, plan_retention, run_pipeline, status_data

    with tempfile.TemporaryDirectory() as tmp:
        settings_ = load_settings(overrides={"store.path": str(Path(tmp) / "m.db"),
                                             "injection.file": str(Path(tmp) / "p.md")})
        PersonaStore.from_settings(settings_).open()
        with closing(sqlite3.connect(Path(tmp) / "m.db")) as conn, conn:
            for row in rows:
                conn.execute(f"INSERT INTO memoria_persona (session_id, {', '.join(row)}) "
                             f"VALUES ('default', {', '.join('?' for _ in row)})", tuple(row.values()))
        with PersonaStore.from_settings(settings_) as store:
            listed = store.list()
            broken = store.warn_broken_rows()
            assert len(listed) + len(broken) == len(rows)  # every row is either served or named
            report = run_pipeline(settings_, store=store, dry_run=True)[0]
            assert report.facts_extracted == len(listed)
            plan_retention(store, settings_.retention)
            status_data(settings_, store)
        result = CliRunner().invoke(app, ["--db", str(Path(tmp) / "m.db"), "--set",
                                          f"injection.file={Path(tmp) / 'p.md'}", "tick", "--force"])
        assert result.exit_code == 0 and result.exception is None, result.stderr


# -- the fast paths of the hot text functions give exactly what the general paths give ----------------------

_TRICKY = "ab #_-.,:+!?1.\t\n\x1b[31m\x07\x85\u2028\u00a0éß日本\u0915\u093f\ufe0f\u200b"  # marks, joiners, dress
_printable_and_worse = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.text(
    alphabet=st.sampled_from(list(_TRICKY)), max_size=40)


@settings(max_examples=2000, deadline=None)
@given(text=_printable_and_worse)
def test_inline_and_fact_form_fast_paths_match_the_general_paths(text):
    import re
    import unicodedata

    from pipeline import text as texts
    from pipeline.fs.regions import MARKER_WORD, defuse
    from pipeline.render import sanitize

    shown = defuse(text) if MARKER_WORD in text else text  # the marker word is defused on either path
    cleaned = sanitize._SPACE.sub(" ", sanitize._CONTROL.sub("", sanitize._ANSI.sub("", shown))).strip()
    assert sanitize.inline(text) == ("\\" + cleaned if cleaned.startswith("#") else cleaned)
    visible = "".join(c for c in unicodedata.normalize("NFKC", text) if unicodedata.category(c) != "Cf")
    folded = unicodedata.normalize("NFKC", visible.casefold()).translate(texts.DASHES)
    normal = " ".join(folded.split()).rstrip(texts.FINAL_MARKS)
    assert texts.normal_form(text) == normal
    normal = re.sub(r"^(?:[\W_]*?\d{1,3}[.)] )+", "", normal)
    shape = texts._NOT_WORD.sub(texts._mark_as_letter, normal)
    assert texts.fact_form(text) == " ".join(normal[m.start():m.end()] for m in texts._WORD.finditer(shape))
