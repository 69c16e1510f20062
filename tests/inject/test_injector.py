"""The injector: same cap as the pipeline, a syscall-free warm path, and loud degradation."""

from __future__ import annotations

import builtins
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import (
    PersonaInjector,
    PersonaPromptMixin,
    PersonaStore,
    cap_text,
    get_counter,
    load_settings,
    resolve_target,
    run_pipeline,
)
from pipeline.cli import app
from pipeline.integrations.hermes import HermesPersonaPromptMixin
from pipeline.render.notes import truncation_note

from ..conftest import REPO, local_settings, obeying_file_modes, write

HEADER = "\n\n# L3 Persona (Active Behavioral Rules)\n"
SHOWN = HEADER.removeprefix("\n\n")  # the appendix as `persona inject` prints it
O200K = get_counter("o200k_base")


@pytest.fixture
def persona_file(tmp_path: Path) -> Path:
    return tmp_path / "persona.md"


def make(persona_file: Path, **overrides) -> PersonaInjector:
    base = {"injection.enabled": True, "injection.file": str(persona_file), "injection.check_interval_ms": 0}
    base.update(overrides)
    return PersonaInjector(load_settings(overrides=base))


def test_inject_appends_header_and_block(persona_file):
    write(persona_file, "## style\n\n- Answers tersely.\n")
    expected = "You are helpful." + HEADER + "## style\n\n- Answers tersely.\n"
    assert make(persona_file).inject("You are helpful.") == expected


def test_a_title_in_the_file_never_follows_the_header(persona_file):
    write(persona_file, "# Persona\n\n## style\n\n- x\n")
    assert make(persona_file).inject("S") == "S" + HEADER + "## style\n\n- x\n"


def test_the_header_is_configurable(persona_file):
    write(persona_file, "## a\n- x\n")
    injected = make(persona_file, **{"injection.header": "## About the user"}).inject("S")
    assert injected == "S\n\n## About the user\n## a\n- x\n"


def test_disabled_touches_no_file(persona_file, monkeypatch):
    write(persona_file, "## a\n- x\n")
    injector = make(persona_file, **{"injection.enabled": False})
    calls = []
    real_open, real_stat = builtins.open, os.stat
    monkeypatch.setattr(builtins, "open", lambda *a, **k: calls.append(a) or real_open(*a, **k))
    monkeypatch.setattr(os, "stat", lambda *a, **k: calls.append(a) or real_stat(*a, **k))
    assert injector.block() == "" and injector.inject("S") == "S"
    assert calls == []


def test_the_injector_uses_the_pipelines_cap(tmp_path, persona_file):
    settings = local_settings(tmp_path, {"injection.file": str(persona_file),
                                        "injection.enabled": True, "cap.token_cap": 120})
    with PersonaStore.from_settings(settings) as store:
        for i in range(60):
            store.add(f"fact {i} about something", topic=f"topic {i % 12}")
        report = run_pipeline(settings, store=store)[0]
    assert report.sections_dropped > 0
    # What was previewed is exactly what is injected.
    assert PersonaInjector(settings).block() == report.text


def test_a_hand_edited_file_is_capped_at_its_own_sections(persona_file):
    sections = [f"## s{i}\n\n" + "".join(f"- item {i}.{j} with words\n" for j in range(8)) + "\n" for i in range(40)]
    write(persona_file, "".join(sections))
    block = make(persona_file, **{"cap.token_cap": 200}).block()
    counter = get_counter("o200k_base")
    assert counter.count(block) <= 200
    expected = cap_text("".join(sections), budget=200, counter=counter, boundary="## ",
                        note=truncation_note(resolve_target(load_settings(), "markdown"))).text
    assert block == expected and "\n" in block


def test_cjk_file_is_capped(persona_file):
    write(persona_file, "## 中文\n\n" + "".join("- 这是一个很长的中文句子，用来测试上限。\n" for _ in range(2000)))
    block = make(persona_file, **{"cap.token_cap": 300}).block()
    assert 0 < get_counter("o200k_base").count(block) <= 300


def test_a_content_change_that_restores_mtime_is_seen(persona_file):
    write(persona_file, "## a\n\n- old fact\n")
    injector = make(persona_file)
    assert "old fact" in injector.block()
    before = persona_file.stat()
    persona_file.write_text("## a\n\n- new fact\n")  # same size, same inode
    os.utime(persona_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert persona_file.stat().st_mtime_ns == before.st_mtime_ns
    assert "new fact" in injector.block()


def test_warm_calls_make_no_syscall(persona_file, monkeypatch):
    write(persona_file, "## a\n\n- x\n")
    injector = make(persona_file, **{"injection.check_interval_ms": 60_000})
    first = injector.block()
    calls = []
    monkeypatch.setattr(os, "stat", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(builtins, "open", lambda *a, **k: calls.append(a))
    assert [injector.block() for _ in range(100)] == [first] * 100
    assert calls == []


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.mkdir(), "is a directory"),
    ],
)
def test_errors_degrade_to_empty_with_one_warning(persona_file, caplog, prepare, message):
    prepare(persona_file)
    injector = make(persona_file)
    with caplog.at_level(logging.WARNING):
        assert injector.inject("S") == "S"
        assert injector.block() == ""
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and message in warnings[0]


def test_bad_utf8_uses_replacement_characters_and_warns(persona_file, caplog):
    persona_file.write_bytes(b"## a\n\n- caf\xe9 au lait\n")
    with caplog.at_level(logging.WARNING):
        block = make(persona_file).block()
    assert block == "## a\n\n- caf\ufffd au lait\n"
    assert any("not valid UTF-8" in r.getMessage() for r in caplog.records)


def test_recovers_when_the_file_appears(persona_file):
    injector = make(persona_file)
    assert injector.block() == ""
    write(persona_file, "## a\n\n- x\n")
    assert injector.block() == "## a\n\n- x\n"


PERMISSION_SCRIPT = """
import logging, sys
from pipeline import PersonaInjector
from pipeline import load_settings
logging.basicConfig(level=logging.WARNING, format="%(message)s")
settings = load_settings(overrides={"injection.enabled": True, "injection.file": sys.argv[1]})
print(repr(PersonaInjector(settings).inject("S")))
"""


def test_permission_denied_degrades_with_a_warning_in_a_real_process(persona_file, tmp_path):
    write(persona_file, "## secret\n\n- x\n")
    persona_file.chmod(0o000)
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": str(REPO)}
    done = subprocess.run([*obeying_file_modes(), sys.executable, "-c", PERMISSION_SCRIPT, str(persona_file)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip() == "'S'", done.stderr
    assert "is not readable (permission denied); injecting nothing" in done.stderr


def test_inject_command_prints_exactly_the_appendix(persona_file, tmp_path):
    write(persona_file, "## a\n\n- x\n")
    runner = CliRunner()
    result = runner.invoke(app, ["--set", "injection.enabled=true", "--set", f"injection.file={persona_file}",
                                 "inject"])
    assert result.stdout == SHOWN + "## a\n\n- x\n"  # from the header on: no blank lines before it
    disabled = runner.invoke(app, ["--set", f"injection.file={persona_file}", "inject"])
    assert disabled.stdout == "" and "injection is disabled" in disabled.stderr


class Agent(PersonaPromptMixin):
    def __init__(self, settings=None):
        self.persona_settings = settings

    def system_prompt(self) -> str:
        return self._with_persona_block("You are Hermes.")


def test_hermes_mixin_is_a_drop_in(persona_file, monkeypatch):
    write(persona_file, "## a\n\n- x\n")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_ENABLED", "1")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_FILE", str(persona_file))
    agent = Agent()
    assert agent._persona_block() == "## a\n\n- x\n"
    assert agent.system_prompt() == "You are Hermes." + HEADER + "## a\n\n- x\n"
    assert HermesPersonaPromptMixin is PersonaPromptMixin


def test_hermes_mixin_disabled_by_default(persona_file):
    write(persona_file, "## a\n\n- x\n")
    agent = Agent(load_settings(overrides={"injection.file": str(persona_file)}))
    assert agent.system_prompt() == "You are Hermes."


TOKENIZER_LOADED = """
import sys
from pipeline.cli import app
try:
    app(sys.argv[1:], prog_name="persona")
except SystemExit:
    pass
print("toktok" in sys.modules, file=sys.stderr)
"""


def inject_in_a_process(tmp_path: Path, persona_file: Path) -> tuple[str, bool]:
    """(what `persona inject` prints, whether it loaded the tokenizer), in a fresh process."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", TOKENIZER_LOADED, "--db", str(tmp_path / "m.db"), "--set",
                           "injection.enabled=true", "--set", f"injection.file={persona_file}", "--set",
                           "cap.token_cap=120", "inject"],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    return done.stdout, done.stderr.strip().splitlines()[-1] == "True"


def test_inject_trusts_the_count_a_render_recorded_and_caps_anything_else(tmp_path, persona_file):
    settings = local_settings(tmp_path, {"injection.file": str(persona_file),
                                        "injection.enabled": True, "cap.token_cap": 120})
    with PersonaStore.from_settings(settings) as store:
        for i in range(40):
            store.add(f"Fact number {i} about how the user likes to work", topic=f"topic {i % 7}")
        report = run_pipeline(settings, store=store)[0]
    assert report.tokens == O200K.count(persona_file.read_text())  # the recorded count is the file's exact count
    counted = PersonaInjector(settings).inject("").removeprefix("\n\n")  # inject prints from the header on

    printed, loaded = inject_in_a_process(tmp_path, persona_file)
    assert printed == counted and not loaded  # the same bytes out, and no tokenizer load for them

    persona_file.write_text(persona_file.read_text() + "## added by hand\n\n" + "- a long hand-written line\n" * 60)
    printed, loaded = inject_in_a_process(tmp_path, persona_file)
    assert loaded and printed == PersonaInjector(settings).inject("").removeprefix("\n\n")
    assert O200K.count(printed.removeprefix(SHOWN)) <= 120 and "added by hand" not in printed


HOST_FIRST_BLOCK = """
import sys
from pipeline import PersonaInjector, load_settings
settings = load_settings(overrides={"store.path": sys.argv[1], "injection.file": sys.argv[2],
                                    "injection.enabled": True, "cap.token_cap": 120})
print(PersonaInjector(settings).block(), end="")
print("toktok" in sys.modules, file=sys.stderr)
"""


def first_block_in_a_process(tmp_path: Path, persona_file: Path) -> tuple[str, bool]:
    """(a new live-mode injector's first block, whether it loaded the tokenizer), in a fresh process."""
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", HOST_FIRST_BLOCK, str(tmp_path / "m.db"), str(persona_file)],
                          capture_output=True, text=True, env=env, timeout=120, check=True)
    return done.stdout, done.stderr.strip().splitlines()[-1] == "True"


def test_a_hosts_first_live_block_trusts_the_recorded_count_and_caps_a_hand_edit(tmp_path, persona_file):
    settings = local_settings(tmp_path, {"injection.file": str(persona_file), "injection.enabled": True,
                                        "cap.token_cap": 120})
    with PersonaStore.from_settings(settings) as store:
        for i in range(40):
            store.add(f"Fact number {i} about how the user likes to work", topic=f"topic {i % 7}")
        run_pipeline(settings, store=store)
    counted = PersonaInjector(settings).block()

    block, loaded = first_block_in_a_process(tmp_path, persona_file)
    assert block == counted and not loaded  # the same bytes, and nothing counted: the render recorded them

    persona_file.write_text(persona_file.read_text() + "## added by hand\n\n" + "- a long hand-written line\n" * 60)
    block, loaded = first_block_in_a_process(tmp_path, persona_file)
    assert loaded and O200K.count(block) <= 120 and "added by hand" not in block


def test_a_hand_written_file_with_no_database_is_counted_and_no_database_is_made(tmp_path, persona_file):
    write(persona_file, "## style\n\n" + "- a long hand-written line\n" * 60)
    block, loaded = first_block_in_a_process(tmp_path, persona_file)
    assert loaded and O200K.count(block) <= 120 and not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("template", ["persona.md.j2", "persona.txt.j2", "persona.xml.j2", "persona.jsonl.j2"])
def test_a_title_line_only_takes_tokens_away(tmp_path, template):
    # Why a recorded count for a whole file also bounds its body once the injector drops the title.
    settings = local_settings(tmp_path, {"injection.file": str(tmp_path / "p"),
                                        "targets.markdown.template": template})
    with PersonaStore.from_settings(settings) as store:
        for i in range(30):
            store.add(f"Préfère les réponses courtes {i} 🎉 用中文", topic=f"topic {i % 5}")
        text = run_pipeline(settings, store=store, dry_run=True)[0].text
    lines = text.split("\n", 1)
    body = lines[1].lstrip("\n") if text.startswith("# ") else text
    assert O200K.count(body) == O200K.count(text) - (O200K.count(text[: len(text) - len(body)]) if body != text else 0)


# -- the host survives us: a huge file, one warning per problem ------------------


HUGE_FILE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (400 * 1024 * 1024, 400 * 1024 * 1024))
from pipeline import PersonaInjector
from pipeline import load_settings
settings = load_settings(overrides={"injection.enabled": True, "injection.file": sys.argv[1]})
block = PersonaInjector(settings).block()
print(len(block), block.count("- fact"))
"""


def test_a_100_mb_persona_file_cannot_take_the_host_down(tmp_path):
    persona = tmp_path / "persona.md"
    with persona.open("w") as handle:
        for index in range(1_400_000):
            handle.write(f"## topic {index}\n\n- fact {index} with some words in it\n\n")
    assert persona.stat().st_size > 70_000_000
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", HUGE_FILE, str(persona)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    length, facts = map(int, done.stdout.split())
    assert length > 0 and facts > 10  # the first part of the file, capped
    assert done.stderr.count("larger than 1000000 bytes") == 1


def test_the_injector_warns_once_per_problem_and_again_after_a_recovery(tmp_path, caplog):
    persona = tmp_path / "persona.md"
    injector = PersonaInjector(load_settings(overrides={"injection.enabled": True, "injection.file": str(persona),
                                                        "injection.check_interval_ms": 0}))
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            assert injector.block() == ""  # missing: one warning
        persona.mkdir()
        for _ in range(3):
            injector.block()  # a different problem: one more
        persona.rmdir()
        write(persona, "## a\n\n- b\n")
        assert injector.block() == "## a\n\n- b\n"  # recovered
        persona.unlink()
        injector.block()  # missing again: said again
    messages = [r.getMessage() for r in caplog.records]
    assert [m.split(" ", 3)[-1] for m in messages] == ["does not exist; injecting nothing",
                                                       "is a directory; injecting nothing",
                                                       "does not exist; injecting nothing"]
