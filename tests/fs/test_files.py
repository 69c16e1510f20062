"""Files we read and write (fs/): what a write may never land on, odd paths, FIFOs and symlinks, atomic
private writes, YAML limits.

Where the real thing is a process (a kill, a hang, memory), it runs in a subprocess with a timeout. The
usual shape of a refusal: one line on stderr, no traceback, exit 1, nothing changed.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaInjector, PersonaStore, StageError, load_settings, run_pipeline
from pipeline.cli import app
from pipeline.fs.lock import lock_path

from ..conftest import cli, digest, failed_cleanly, local_settings, python, schema_of, write

# -- a write never lands on the store, a config file or a refused target ---------


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


def test_no_lock_file_is_left_beside_a_refused_target(tmp_path, seeded):
    (tmp_path / "dir.md").mkdir()
    for target in ("dir.md", "/dev/null"):
        failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", f"injection.file={target}", "render"))
    assert not (tmp_path / "dir.md.lock").exists() and not Path("/dev/null.lock").exists()


# -- odd persona paths: empty, directories, devices, FIFOs, symlinks -------------


@pytest.mark.parametrize("value", ["", "/", ".", "/dev/null", "/proc"])
def test_odd_persona_paths_are_one_clear_error(tmp_path, seeded, value):
    for args in (["render"], ["tick", "--force"]):
        failed_cleanly(cli(tmp_path, "--db", "m.db", "--set", f"injection.file={value}", *args))
    inject = cli(tmp_path, "--db", "m.db", "--set", f"injection.file={value}", "--set", "injection.enabled=true",
                 "inject")
    assert inject.returncode == 0 and "Traceback" not in inject.stderr and inject.stdout == ""


@pytest.mark.parametrize("kind", ["directory", "fifo", "escaping symlink"])
def test_a_hostile_persona_path_is_refused_clearly(tmp_path, kind, caplog):
    path = tmp_path / "out" / "persona.md"
    path.parent.mkdir()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        write(tmp_path / "secret.txt", "## secret\n\n- not for the prompt\n")
        path.symlink_to(tmp_path / "secret.txt")
    settings = local_settings(tmp_path, {"injection.file": str(path),
                                        "injection.enabled": True, "injection.check_interval_ms": 0})
    with PersonaStore.from_settings(settings) as store:
        store.add("x", topic="t")
        with pytest.raises(StageError, match=r"cannot write persona file .*persona\.md: it "):
            run_pipeline(settings, store=store)
    with caplog.at_level(logging.WARNING):
        assert PersonaInjector(settings).inject("S") == "S"  # degrades, and never blocks on the FIFO
    assert any("injecting nothing" in r.getMessage() for r in caplog.records)
    if kind == "escaping symlink":
        assert (tmp_path / "secret.txt").read_text() == "## secret\n\n- not for the prompt\n"


def test_a_symlink_within_its_directory_is_followed(tmp_path):
    write(tmp_path / "persona-v2.md", "## a\n\n- x\n")
    (tmp_path / "persona.md").symlink_to("persona-v2.md")
    settings = load_settings(overrides={"injection.file": str(tmp_path / "persona.md"), "injection.enabled": True})
    assert PersonaInjector(settings).block() == "## a\n\n- x\n"


# -- crash during write ----------------------------------------------------------


CRASHER = """
import sys
from pathlib import Path
from pipeline.fs.write import atomic_write_text
path, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
print("ready", flush=True)
while True:
    atomic_write_text(path, new * 4000)
    atomic_write_text(path, old * 4000)
"""


@pytest.mark.slow
def test_sigkill_at_random_points_never_leaves_a_partial_file(tmp_path):
    path = tmp_path / "out" / "persona.md"
    old, new = "## old\n\n- old fact\n", "## new\n\n- new fact, a little longer\n"
    write(path, old * 4000)
    rng = random.Random(1234)
    saw_leftover = False
    for _ in range(200):
        proc = python(CRASHER, str(path), old, new)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, 0.01))  # let it get somewhere in its write loop
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()
        assert path.read_text() in (old * 4000, new * 4000)
        saw_leftover |= any(p.name.startswith(".persona.md.tmp-") for p in path.parent.iterdir())
    assert saw_leftover, "no kill landed mid-write; the test did not test anything"
    # The next real write cleans up whatever the killed writers left.
    settings = local_settings(tmp_path, {"injection.file": str(path)})
    with PersonaStore.from_settings(settings) as store:
        store.add("x", topic="t")
        run_pipeline(settings, store=store, overwrite=True)  # the crashers' file was never a render of ours
    assert [p.name for p in path.parent.iterdir() if ".tmp-" in p.name] == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- privacy ---------------------------------------------------------------------


def test_every_file_we_write_is_private(tmp_path):
    home = tmp_path / "private"
    persona = home / "deep" / "memory" / "persona.md"
    db = home / "data" / "m.db"
    db.parent.mkdir(parents=True, mode=0o700)
    settings = load_settings(overrides={"store.path": str(db), "injection.file": str(persona),
                                        "injection.enabled": True, "injection.mode": "session"})
    with PersonaStore.from_settings(settings) as store:
        store.add("secret habit", topic="t")
        run_pipeline(settings, store=store)
    PersonaInjector(settings, session_id="s").block()
    CliRunner().invoke(app, ["config", "init", str(home / "conf" / "persona.yaml")])
    files = [p for p in home.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"persona.md", "m.db", "persona.yaml"}
    assert stat.S_IMODE(lock_path(persona).stat().st_mode) == 0o600  # in our state directory, not beside it
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for directory in [persona.parent, persona.parent.parent, home / "conf"]:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory


# -- YAML limits: deep or exploding YAML in every file we read -------------------


BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9 if i else ['"lol"'] * 9) + "]\n"
               for i in range(9))


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
