"""No input can destroy data, leak one profile into another, or crash the host (issue: Hardening).

One section per class of defect. Each test tries several inputs of its kind. Where the real thing is a
process (a segfault, memory, a hang), it runs in a subprocess with a memory limit and a timeout. The
usual shape: one line on stderr, no traceback, exit 1, nothing changed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import resource
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import InputError, PersonaError, PersonaInjector, PersonaStore, load_settings, run_pipeline
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call

from .conftest import local_settings, write

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()
BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9 if i else ['"lol"'] * 9) + "]\n"
               for i in range(9))


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None, memory_mb: int = 1024,
        timeout: float = 60, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`persona ARGS` as a real process with a clean environment, a memory limit and a timeout."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    base = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO)}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024 * 1024, memory_mb * 1024 * 1024))

    return subprocess.run([sys.executable, "-m", "pipeline", *args], env=base | (env or {}), capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, cwd=tmp_path, input=stdin)


def failed_cleanly(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """The process failed with one line on stderr and no traceback; returns that line."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("Usage:")
             and not line.startswith("Try ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A database with one fact; its directory is the working directory of `cli`."""
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        store.add("Answers tersely.", topic="style")
    return db


def schema_of(db: Path) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()


# -- 1. a write never lands on the store, a config file or another target ------------------------


@pytest.mark.parametrize("spelling", ["m.db", "./m.db", "sub/../m.db", "{tmp}/m.db", "link.db", "hard.db",
                                      "m.db-wal", "m.db-shm", "m.db-journal"])
def test_a_render_never_writes_over_the_store(tmp_path, seeded, spelling):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.db").symlink_to(seeded)
    os.link(seeded, tmp_path / "hard.db")
    before, schema = digest(seeded), schema_of(seeded)
    target = spelling.format(tmp=tmp_path)
    for args in (["--db", "./m.db", "--set", f"injection.file={target}", "render"],
                 ["--db", "m.db", "tick", "--force"]):
        env = {"MNEMOSYNE_PERSONA_FILE": target} if args[-2:] == ["tick", "--force"] else {}
        line = failed_cleanly(cli(tmp_path, *args, env=env))
        assert "refusing to write" in line and "database" in line
    assert digest(seeded) == before and schema_of(seeded) == schema
    assert not (tmp_path / "m.db-journal").exists() or spelling == "m.db-journal"


def test_a_render_never_writes_over_a_loaded_config_file(tmp_path, seeded):
    config = write(tmp_path / "persona.yaml", "cap:\n  token_cap: 900\n")
    local = write(tmp_path / "persona.local.yaml", "cap:\n  token_cap: 800\n")
    for target in (config, local, Path("./persona.yaml")):
        line = failed_cleanly(cli(tmp_path, "--db", "m.db", "-c", "persona.yaml", "--set",
                                  f"injection.file={target}", "render"))
        assert "refusing to write" in line and "config file" in line
    assert config.read_text() == "cap:\n  token_cap: 900\n" and local.read_text() == "cap:\n  token_cap: 800\n"


def test_two_targets_on_one_file_are_refused(tmp_path, seeded):
    config = write(tmp_path / "two.yaml", "targets:\n  json:\n    template: persona.jsonl.j2\n")
    line = failed_cleanly(cli(tmp_path, "--db", "m.db", "-c", str(config), "render"))
    assert "targets 'markdown' and 'json' both write" in line
    same = write(tmp_path / "same.yaml", "targets:\n  a:\n    path: out.md\n  b:\n    path: ./out.md\n")
    assert "both write" in failed_cleanly(cli(tmp_path, "--db", "m.db", "-c", str(same), "render"))


def test_config_set_edits_through_a_symlink_and_keeps_it(tmp_path):
    real = write(tmp_path / "dotfiles" / "persona.yaml", "# mine\ncap:\n  token_cap: 900  # keep\n")
    link = tmp_path / "persona.yaml"
    link.symlink_to(real)
    result = runner.invoke(app, ["config", "set", "cap.token_cap", "700", "--file", str(link)])
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and real.read_text() == "# mine\ncap:\n  token_cap: 700  # keep\n"


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_config_set_and_init_refuse_anything_but_a_regular_file_without_hanging(tmp_path, kind):
    path = tmp_path / "persona.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to("/dev/null")
    for args in (["config", "set", "cap.token_cap", "700", "--file", str(path)],
                 ["config", "init", str(path), "--force"]):
        line = failed_cleanly(cli(tmp_path, *args, timeout=20))
        assert "not a regular file" in line or "cannot read" in line
    assert path.is_fifo() if kind == "fifo" else path.is_dir() if kind == "directory" else path.is_symlink()


def test_config_edits_never_land_on_the_store_or_a_persona_file(tmp_path, seeded):
    persona = write(tmp_path / "persona.md", "## x\n\n- y\n")
    before = digest(seeded)
    for target in ("m.db", "./m.db-wal", "persona.md"):
        for args in (["config", "set", "cap.token_cap", "700", "--file", target],
                     ["config", "init", target, "--force"]):
            line = failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", "injection.file=persona.md", *args))
            assert "refusing to write" in line
    assert digest(seeded) == before and persona.read_text() == "## x\n\n- y\n"


# -- 2. one profile's facts never reach another's prompt --------------------------------------------


def test_another_profile_needs_its_own_path(tmp_path, seeded):
    persona = tmp_path / "persona.md"
    assert runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "render"]).exit_code == 0
    before = persona.read_text()
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's secret rule.", "--topic", "bob", "--profile", "bob"])
    for args in (["render", "--profile", "bob"], ["tick", "--force", "--profile", "bob"]):
        result = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", *args])
        assert result.exit_code == 1 and "belongs to profile 'default'" in result.stderr
        assert "{profile}" in result.stderr
    overrides = {"store.path": str(seeded), "injection.file": str(persona)}
    tools = PersonaTools(lambda: load_settings(overrides=overrides))
    with pytest.raises(InputError, match="belongs to profile 'default'"):
        call(tools.catalog(legacy=False), "persona_render", {"profile": "bob"})
    assert persona.read_text() == before and "Bob" not in before


def test_a_profile_path_gives_each_profile_its_own_file(tmp_path, seeded):
    pattern = str(tmp_path / "personas" / "{profile}.md")
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's rule.", "--topic", "bob", "--profile", "bob"])
    for session in ("default", "bob", "../../etc/x"):
        result = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={pattern}", "render",
                                     "--profile", session])
        assert result.exit_code == 0, result.stderr
    files = sorted(p.name for p in (tmp_path / "personas").iterdir() if p.suffix == ".md")
    assert files == ["..%2F..%2Fetc%2Fx.md", "bob.md", "default.md"]  # no profile climbs out of the directory
    assert "Bob" in (tmp_path / "personas" / "bob.md").read_text()
    assert "Bob" not in (tmp_path / "personas" / "default.md").read_text()


def test_tick_notices_a_file_another_profile_wrote(tmp_path, seeded):
    persona = tmp_path / "persona.md"
    runner.invoke(app, ["--db", str(seeded), "add", "Bob's rule.", "--topic", "bob", "--profile", "bob"])
    as_bob = ["--db", str(seeded), "--set", f"injection.file={persona}", "--set", "store.profile=bob"]
    assert runner.invoke(app, [*as_bob, "render"]).exit_code == 0  # bob owned the file then
    status = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "status"]).stdout
    assert "last rendered for profile 'bob'" in status
    tick = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "tick"])
    assert tick.exit_code == 0 and "rendered" in tick.stdout
    assert "Bob" not in persona.read_text() and "Answers tersely." in persona.read_text()


# -- 3. templates reach nothing outside their directories, and no expression runs away ---------------

USER_TEMPLATE_ATTACKS = {
    "huge string": "{{ ('x' * 1000000) * 1000 }}",
    "huge list": "{{ ([1] * 300000000) | length }}",
    "huge padding": "{{ 'x'.center(1000000000) }}",
    "huge number": "{{ 7 ** 70000000 }}",
    "nested loops": "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
    "recursive macro": "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}",
}


@pytest.mark.parametrize("name", sorted(USER_TEMPLATE_ATTACKS))
def test_a_runaway_user_template_is_stopped_per_expression(tmp_path, seeded, name):
    templates = tmp_path / "templates"
    write(templates / "evil.j2", USER_TEMPLATE_ATTACKS[name])
    settings = write(tmp_path / "evil.yaml", f"render:\n  template_dirs: [{templates}]\n  timeout_s: 2\n"
                                            "  max_memory_mb: 256\ntargets:\n  markdown:\n    template: evil.j2\n")
    started = time.monotonic()
    done = cli(tmp_path, "--db", "m.db", "-c", str(settings), "render", memory_mb=2048, timeout=60)
    line = failed_cleanly(done)
    assert "evil.j2" in line and ("stopped" in line or "RecursionError" in line or "memory" in line), line
    assert time.monotonic() - started < 30
    assert not (tmp_path / ".hermes").exists()


@pytest.mark.parametrize("statement", ['{% include "leak.txt" %}', '{% import "leak.txt" as x %}',
                                       '{% extends "leak.txt" %}', '{% include "sub/leak.txt" %}',
                                       '{% include "../secret.txt" %}'])
def test_includes_stay_inside_the_template_directories_symlinks_included(tmp_path, seeded, statement):
    secret = write(tmp_path / "secret.txt", "TOP SECRET")
    templates = tmp_path / "templates"
    write(templates / "evil.j2", statement)
    (templates / "leak.txt").symlink_to(secret)
    (templates / "sub").symlink_to(tmp_path)
    settings = write(tmp_path / "evil.yaml", f"render:\n  template_dirs: [{templates}]\n"
                                            "targets:\n  markdown:\n    template: evil.j2\n")
    result = runner.invoke(app, ["--db", str(seeded), "-c", str(settings), "--set",
                                 f"injection.file={tmp_path / 'out.md'}", "render", "--stdout"])
    assert result.exit_code == 1 and "TOP SECRET" not in result.stdout + result.stderr
    assert "evil.j2:1: " in result.stderr and "the template directories" in result.stderr


def test_a_template_that_is_itself_a_symlink_out_of_its_directory_is_refused(tmp_path, seeded):
    outside = write(tmp_path / "elsewhere" / "t.j2", "{{ persona.fact_count }}")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "t.j2").symlink_to(outside)
    result = runner.invoke(app, ["--db", str(seeded), "--set", f"render.template_dirs=[{templates}]", "--set",
                                 "targets.markdown.template=t.j2", "render", "--dry-run"])
    assert result.exit_code == 1 and "outside the template directories" in result.stderr


def test_a_well_behaved_user_template_renders_in_its_child(tmp_path, seeded):
    templates = tmp_path / "templates"
    write(templates / "mine.j2", "{% for s in persona.sections %}## {{ s.topic }}\n{% for i in s.items %}"
                                 "- {{ i.text }} ({{ i.tier }})\n{% endfor %}{% endfor %}")
    result = runner.invoke(app, ["--db", str(seeded), "--set", f"render.template_dirs=[{templates}]", "--set",
                                 "targets.markdown.template=mine.j2", "render", "--stdout"])
    assert result.exit_code == 0 and result.stdout == "## style\n- Answers tersely. (long_term)\n"


# -- 4. input that used to crash --------------------------------------------------------------------

DEEP = {"flow 50,000": "facts: " + "[" * 50_000 + "]" * 50_000 + "\n",
        "flow 1,000": "facts: " + "[" * 1000 + "]" * 1000 + "\n",
        "block 1,000": "facts:\n" + "".join("  " * (i + 1) + "k:\n" for i in range(1000)),
        "dashes 50,000": "facts:\n  " + "- " * 50_000 + "x\n",
        "mappings 1,000": "facts: " + "{a: " * 1000 + "1" + "}" * 1000 + "\n",
        "alias bomb": BOMB + "facts: []\n"}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_deep_or_exploding_yaml_is_one_clear_error_in_every_file_we_read(tmp_path, name):
    text = DEEP[name]
    facts = write(tmp_path / "facts.yaml", text)
    config = write(tmp_path / "persona.yaml", text.replace("facts:", "unused:"))
    hermes = write(tmp_path / "hh" / "config.yaml", text.replace("facts:", "memory:"))
    started = time.monotonic()
    for args in (["--db", "m.db", "import", str(facts)], ["-c", str(config), "status"],
                 ["hermes", "install", "--hermes-home", str(hermes.parent), "--activate"]):
        line = failed_cleanly(cli(tmp_path, *args, memory_mb=768, timeout=60))
        assert "nested more than" in line or "expand past" in line, line
    assert time.monotonic() - started < 45
    assert hermes.read_text() == text.replace("facts:", "memory:")


@pytest.mark.parametrize("value", ["", "/", ".", "/dev/null", "/proc"])
def test_odd_persona_paths_are_one_clear_error(tmp_path, seeded, value):
    for args in (["render"], ["tick", "--force"]):
        failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", f"injection.file={value}", *args))
    inject = cli(tmp_path, "--db", "m.db", "--set", f"injection.file={value}", "--set", "injection.enabled=true",
                 "inject")
    assert inject.returncode == 0 and "Traceback" not in inject.stderr and inject.stdout == ""


@pytest.mark.parametrize("number", [str(2**63), str(2**64), str(10**30), "0", "-1"])
def test_ids_sqlite_cannot_hold_are_one_clear_error(tmp_path, seeded, number):
    for command in ("demote", "reinforce"):
        line = failed_cleanly(cli(tmp_path, "--db", "m.db", command, "--", number))
        assert "invalid persona id" in line
    tools = PersonaTools(lambda: load_settings(overrides={"store.path": str(seeded)})).catalog(legacy=True)
    with pytest.raises(InputError):
        call(tools, "mnemosyne_persona_reinforce", {"persona_id": int(number)})


@pytest.mark.parametrize(("key", "value"), [("triggers.interval", str(10**30)), ("cap.token_cap", str(2**63)),
                                            ("store.busy_timeout_ms", str(2**31)), ("retention.half_life_days", ".inf"),
                                            ("retention.working_ttl_hours", ".nan"), ("render.timeout_s", "1e300"),
                                            ("targets.markdown.budget", str(2**70))])
def test_huge_numbers_are_one_clear_error_naming_the_key(tmp_path, seeded, key, value):
    line = failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", f"{key}={value}", "status"))
    assert key in line
    env_name = "MNEMOSYNE_PERSONA_" + key.upper().replace(".", "__")
    assert env_name in failed_cleanly(cli(tmp_path, "--db", "m.db", "status", env={env_name: value}))


def test_a_huge_busy_timeout_never_claims_a_wait_that_did_not_happen(tmp_path, seeded):
    line = failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", "store.busy_timeout_ms=2147483648", "list"))
    assert "store.busy_timeout_ms" in line and "waited" not in line


def test_undecodable_bytes_in_arguments_and_environment_are_one_clear_error(tmp_path, seeded):
    bad = os.fsdecode(b"\xff\xfe")
    for args in (["add", bad, "--topic", "t"], ["--db", bad, "list"], ["add", "x", "--topic", bad],
                 ["promote", bad]):
        line = failed_cleanly(subprocess.run([sys.executable, "-m", "pipeline", "--db", "m.db", *args],
                                             capture_output=True, text=True, cwd=tmp_path, timeout=60,
                                             env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                                                  "HOME": str(tmp_path)}), code=2)
        assert "not valid UTF-8" in line
    for name in ("MNEMOSYNE_PERSONA_FILE", "MNEMOSYNE_PERSONA_STORE__PROFILE", "HERMES_HOME", "MNEMOSYNE_ENV"):
        line = failed_cleanly(subprocess.run([sys.executable, "-m", "pipeline", "--db", "m.db", "status"],
                                             capture_output=True, text=True, cwd=tmp_path, timeout=60,
                                             env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO),
                                                  "HOME": str(tmp_path), name: bad}))
        assert name in line and "not valid UTF-8" in line


def test_lower_case_variables_are_refused_like_unknown_ones(tmp_path, seeded):
    for name in ("mnemosyne_persona_cap__token_cap", "Mnemosyne_Persona_File", "mnemosyne_persona_tokn"):
        line = failed_cleanly(cli(tmp_path, "--db", "m.db", "status", env={name: "5"}))
        assert name in line and "upper case" in line


# -- 5. one bad row never stops everything ------------------------------------------------------------

BAD_ROWS = {
    "negative count": "reinforcement_count = -1",
    "text confidence": "confidence = 'very'",
    "confidence above one": "confidence = 7",
    "NULL content": "content = NULL",
    "BLOB content": "content = X'DEADBEEF'",
    "empty content": "content = '   '",
    "whitespace content": "content = char(9, 12288, 10)",
    "6 MB content": "content = '{big}'",
    "BLOB topic": "topic = X'CAFE'",
    "text count": "reinforcement_count = 'many'",
}


@pytest.mark.parametrize("name", sorted(BAD_ROWS))
def test_a_row_that_breaks_the_contract_is_skipped_with_one_warning(tmp_path, name):
    db = tmp_path / "m.db"
    with PersonaStore(db) as store:
        good = store.add("Keeps answers short.", topic="style").fact
        bad = store.add("Will be broken.", topic="broken").fact
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA ignore_check_constraints = 1")
        if name == "NULL content":  # NOT NULL: rebuild without it, as another tool's schema might be
            conn.execute("UPDATE memoria_persona SET content = '' WHERE id = ?", (bad.id,))
        else:
            conn.execute(f"UPDATE memoria_persona SET {BAD_ROWS[name].format(big='x' * 6_000_000)} WHERE id = ?",
                         (bad.id,))
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(tmp_path / "p.md")})
    said = []
    for args in (["list"], ["status"], ["tick"], ["retention", "--dry-run"], ["render", "--dry-run"]):
        result = runner.invoke(app, ["--db", str(db), "--set", f"injection.file={tmp_path / 'p.md'}", *args])
        assert result.exit_code == 0 and result.exception is None, (args, result.stderr)
        said.append(result.stderr.count(f"skipping persona fact #{bad.id}"))
    assert said[0] == 1 and sum(said) == 1  # named once per process, never fatal
    with PersonaStore.from_settings(settings) as store:
        reports = run_pipeline(settings, store=store, dry_run=True)
        assert [f.id for f in store.list()] == [good.id]
    assert "Keeps answers short." in reports[0].text and "broken" not in reports[0].text


# -- 6. the host survives us -------------------------------------------------------------------------

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


def test_a_write_locked_database_never_stalls_the_session_prompt(tmp_path):
    persona = write(tmp_path / "persona.md", "## a\n\n- b\n")
    settings = local_settings(tmp_path, {"injection.file": str(persona),
                                        "injection.enabled": True, "injection.mode": "session"})
    PersonaStore.from_settings(settings).open()
    with closing(sqlite3.connect(tmp_path / "m.db", isolation_level=None)) as locker:
        locker.execute("BEGIN EXCLUSIVE")
        started = time.monotonic()
        blocks = [PersonaInjector(settings, session_id=f"s{i}").block() for i in range(5)]
        elapsed = time.monotonic() - started
        locker.execute("ROLLBACK")
    assert blocks == ["## a\n\n- b\n"] * 5 and elapsed < 2  # 5 x 50 ms at most, not 5 x 5 s


# -- 7. the user's database is never changed by reading it ---------------------------------------------

MNEMOSYNE_DDL = (REPO / "tests" / "mnemosyne_schema.sql").read_text()


def rollback_journal_db(path: Path) -> Path:
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(MNEMOSYNE_DDL)
        conn.execute("INSERT INTO memoria_persona (tier, topic, content) VALUES ('permanent', 'style', 'Terse.')")
        conn.commit()
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    return path


def test_read_only_commands_never_change_the_database(tmp_path):
    db = rollback_journal_db(tmp_path / "mnemo.db")
    before, schema = digest(db), schema_of(db)
    for args in (["list"], ["list", "--json"], ["status"], ["render", "--dry-run"], ["render", "--stdout"],
                 ["retention", "--dry-run"], ["session", "list"]):
        result = runner.invoke(app, ["--db", str(db), "--set", f"injection.file={tmp_path / 'p.md'}", *args])
        assert result.exit_code == 0, (args, result.stderr)
    assert "Terse." in runner.invoke(app, ["--db", str(db), "list"]).stdout
    assert digest(db) == before and schema_of(db) == schema
    assert not list(tmp_path.glob("mnemo.db-*"))
    assert not (tmp_path / "missing.db").exists() or True
    assert runner.invoke(app, ["--db", str(tmp_path / "missing.db"), "list"]).stdout == "no persona facts\n"
    assert not (tmp_path / "missing.db").exists()


def test_a_write_keeps_the_journal_mode_the_owner_chose(tmp_path):
    db = rollback_journal_db(tmp_path / "mnemo.db")
    assert runner.invoke(app, ["--db", str(db), "add", "New.", "--topic", "t"]).exit_code == 0
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


@pytest.mark.parametrize("missing", ["topic", "content", "reinforcement_count", "session_id"])
def test_an_incompatible_table_is_refused_before_anything_changes(tmp_path, missing):
    db = tmp_path / "odd.db"
    columns = ["id INTEGER PRIMARY KEY", "session_id TEXT", "tier TEXT", "topic TEXT", "content TEXT",
               "confidence REAL", "source_memory_id TEXT", "created_at TEXT", "last_reinforced_at TEXT",
               "reinforcement_count INTEGER", "promotion_reason TEXT"]
    with closing(sqlite3.connect(db)) as conn:
        conn.execute(f"CREATE TABLE memoria_persona ({', '.join(c for c in columns if not c.startswith(missing))})")
    before = schema_of(db)
    for args in (["add", "x", "--topic", "t"], ["list"], ["status"], ["render"]):
        line = failed_cleanly(cli(tmp_path, "--db", "odd.db", *args))
        assert f"has no column '{missing}'" in line
    assert schema_of(db) == before


# -- 8. smaller, same standard ---------------------------------------------------------------------------


def test_a_render_that_cannot_be_recorded_writes_nothing(tmp_path, seeded):
    persona = tmp_path / "persona.md"
    with closing(sqlite3.connect(seeded, isolation_level=None)) as locker:
        locker.execute("BEGIN EXCLUSIVE")
        result = runner.invoke(app, ["--db", str(seeded), "--set", f"injection.file={persona}", "--set",
                                     "store.busy_timeout_ms=100", "render"])
        locker.execute("ROLLBACK")
    assert result.exit_code == 1 and "locked" in result.stderr
    assert not persona.exists()
    assert "last run: never" in runner.invoke(app, ["--db", str(seeded), "status"]).stdout


def test_list_never_prints_terminal_escapes(tmp_path, seeded):
    with closing(sqlite3.connect(seeded)) as conn, conn:
        conn.execute("INSERT INTO memoria_persona (session_id, tier, topic, content) VALUES "
                     "('default', 'working', '\x1b]0;pwned\x07topic', 'red \x1b[31mtext\x1b[0m\x07 and \x9b2J')")
    out = runner.invoke(app, ["--db", str(seeded), "list"]).stdout
    assert "red text and 2J" in out and not any(ch in out for ch in "\x1b\x07\x9b")


def test_no_lock_file_is_left_beside_a_refused_target(tmp_path, seeded):
    (tmp_path / "dir.md").mkdir()
    for target in ("dir.md", "/dev/null"):
        failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", f"injection.file={target}", "render"))
    assert not (tmp_path / "dir.md.lock").exists() and not Path("/dev/null.lock").exists()


def test_a_fifo_at_the_default_config_path_hangs_nothing(tmp_path):
    config = tmp_path / "home" / ".hermes" / "mnemosyne" / "persona.yaml"
    config.parent.mkdir(parents=True)
    os.mkfifo(config)
    for args in (["status"], ["list"], ["config", "show"]):
        line = failed_cleanly(cli(tmp_path, *args, timeout=20))
        assert "persona.yaml" in line and "not a regular file" in line


def test_string_settings_take_text_as_written(tmp_path):
    path = write(tmp_path / "p.yaml", "cap:\n  token_cap: 900\n")
    for key, value in (("injection.header", "# Persona"), ("cap.truncation_note", "[cut]"),
                       ("store.profile", "123"), ("targets.markdown.boundary", "* ")):
        assert runner.invoke(app, ["config", "set", key, value, "--file", str(path)]).exit_code == 0
    settings = load_settings(config_files=[path])
    assert settings.injection.header == "# Persona" and settings.cap.truncation_note == "[cut]"
    assert settings.store.profile == "123" and settings.targets["markdown"].boundary == "* "


def test_add_keeps_a_demoted_fact_demoted_like_import_and_promote(tmp_path, seeded):
    fact = runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style", "--json"])
    persona_id = json.loads(fact.stdout)["fact"]["id"]
    assert runner.invoke(app, ["--db", str(seeded), "demote", str(persona_id)]).exit_code == 0
    again = runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style"])
    assert again.exit_code == 1 and "was demoted; pass --force" in again.stderr
    facts = write(tmp_path / "f.yaml", "facts:\n  - {topic: style, content: Uses tabs.}\n")
    assert "1 skipped as demoted" in runner.invoke(app, ["--db", str(seeded), "import", str(facts)]).stdout
    assert runner.invoke(app, ["--db", str(seeded), "add", "Uses tabs.", "--topic", "style", "--force"]).exit_code == 0


def test_re_importing_keeps_confidence_earned_by_reinforce(tmp_path, seeded):
    facts = write(tmp_path / "f.yaml", "facts:\n  - {topic: git, content: Never force-push., confidence: 0.6}\n")
    settings = load_settings(overrides={"store.path": str(seeded), "retention.reinforce_step": 0.1})
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore.from_settings(settings) as store:
        fact = store.list(topic="git")[0]
        store.reinforce(fact.id)
        store.reinforce(fact.id)
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore(seeded) as store:
        assert store.list(topic="git")[0].confidence == pytest.approx(0.8)
    write(facts, "facts:\n  - {topic: git, content: Never force-push., confidence: 0.5}\n")  # the file changed
    runner.invoke(app, ["--db", str(seeded), "import", str(facts)])
    with PersonaStore(seeded) as store:
        assert store.list(topic="git")[0].confidence == pytest.approx(0.5)


def test_adding_a_target_keeps_the_default_one_and_null_removes_it(tmp_path):
    added = write(tmp_path / "a.yaml", "targets:\n  json:\n    template: persona.jsonl.j2\n    path: p.jsonl\n")
    assert sorted(load_settings(config_files=[added]).targets) == ["json", "markdown"]
    removed = write(tmp_path / "r.yaml", "injection:\n  target: json\ntargets:\n  markdown: null\n  json:\n"
                                         "    template: persona.jsonl.j2\n")
    assert sorted(load_settings(config_files=[removed]).targets) == ["json"]


def test_mcp_without_the_extra_is_one_clear_error(tmp_path):
    fake = write(tmp_path / "shadow" / "mcp" / "__init__.py", "raise ImportError('No module named mcp')\n")
    done = subprocess.run([sys.executable, "-m", "pipeline", "mcp"], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                               "PYTHONPATH": f"{fake.parent.parent}{os.pathsep}{REPO}"})
    assert "optional extra 'mcp'" in failed_cleanly(done)


def test_config_init_into_an_unwritable_place_is_one_clear_error(tmp_path):
    for target in ("/proc/persona.yaml", "/nonexistent-root/persona.yaml"):
        done = cli(tmp_path, "config", "init", target)
        if os.geteuid() == 0 and target.startswith("/nonexistent"):
            Path(target).unlink(missing_ok=True)
            Path(target).parent.rmdir()
            continue  # root may create directories anywhere
        assert "cannot write" in failed_cleanly(done)


def test_version_is_printed(tmp_path):
    done = cli(tmp_path, "--version")
    assert done.returncode == 0 and done.stdout.startswith("persona-tier ")


def test_make_render_never_touches_a_real_persona_file(tmp_path):
    elsewhere = tmp_path / "real-persona.md"
    env = {**os.environ, "MNEMOSYNE_PERSONA_FILE": str(elsewhere), "HERMES_HOME": str(tmp_path / "hh"),
           "MNEMOSYNE_PERSONA_STORE__PATH": str(tmp_path / "real.db")}
    done = subprocess.run(["make", "-s", "render"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not elsewhere.exists() and not (tmp_path / "real.db").exists() and not (tmp_path / "hh").exists()
    assert (REPO / "var" / "demo" / "persona.md").exists()


def test_errors_stay_typed_at_the_library_boundary(tmp_path):
    with pytest.raises(InputError, match="profile is not valid UTF-8"):
        PersonaStore(tmp_path / "m.db", profile="s\udcff")
    with pytest.raises(InputError, match="invalid persona id"):
        PersonaStore(tmp_path / "m.db").get(2**80)
    with PersonaStore(tmp_path / "m.db") as store, pytest.raises(PersonaError):
        store.add("x", topic="t\udcff")
