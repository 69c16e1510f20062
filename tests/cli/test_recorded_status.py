"""`persona status` from its recorded settings says what the full path says, byte for byte, without pydantic; any
part of the settings' key changed alone, or a record in doubt, sends it to the full path."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import PersonaStore, deliver, load_settings, run_pipeline

from ..conftest import REPO
from .test_fast_help import LOADED
from .test_fast_status import typers

PROFILES = ("alice", "bob")
CONFIG = "injection:\n  file: ~/personas/{profile}.md\n"
# Each layout: what the home's persona.yaml says (None: no file), the global options, the environment.
LAYOUTS = {
    "defaults": (None, [], {}),
    "a config file": (CONFIG, ["-c", "~/persona.yaml"], {}),
    "a region and a stored target": (
        "injection:\n  file: ~/personas/{profile}.md\ntargets:\n  markdown: {}\n  agents:\n    output: region\n"
        "    path: ~/work/AGENTS-{profile}.md\n  blocks:\n    output: store\n", ["-c", "~/persona.yaml"], {}),
    "the environment and --set": (CONFIG, ["-c", "~/persona.yaml", "--set", "cap.token_cap=900"],
                                  {"MNEMOSYNE_PERSONA_TRIGGERS__INTERVAL": "7"}),
    "a target with host limits": (
        "injection:\n  file: ~/personas/{profile}.md\ntargets:\n  markdown:\n    limits:\n"
        "      - {amount: 6000, unit: chars}\n", ["-c", "~/persona.yaml"], {}),
    "a deprecated value": ("supersede:\n  detect: auto\n", ["-c", "~/persona.yaml"], {}),
}
# Always the full path: a list of the settings' models (not recorded); a warning (said by the full path alone).
FULL = {"a target with host limits": 1, "a deprecated value": 0}  # layout -> records left


def make_home(tmp_path: Path, config: str | None, env: dict[str, str]) -> Path:
    """A home whose default database holds two profiles' facts, each rendered as ``config`` says."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True, exist_ok=True)
    files = []
    if config is not None:
        (home / "persona.yaml").write_text(config.replace("~", str(home)))
        files = [home / "persona.yaml"]
    for profile in PROFILES:
        settings = load_settings(config_files=files or None, overrides={"store.profile": profile})
        settings.store.path.parent.mkdir(parents=True, exist_ok=True)
        with PersonaStore.from_settings(settings) as store:
            store.add(f"{profile} answers tersely.", topic="style")
            run_pipeline(settings, store=store)
    return home


def persona(home: Path, args: list[str], **env: str) -> tuple[tuple[str, str, int], set[str]]:
    """(stdout, stderr, exit code) of the console script's ``persona ARGS``, and the modules it imported."""
    listing = home / "modules.txt"
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), **env}
    done = subprocess.run([sys.executable, "-c", LOADED, *args, str(listing)], capture_output=True, text=True,
                          env=environment, cwd=home / "work", timeout=120, check=False)
    return (done.stdout, done.stderr, done.returncode), set(listing.read_text().split())


def records(home: Path) -> list[Path]:
    return sorted((home / ".hermes" / "mnemosyne" / "persona-tier" / "settings").glob("*.json"))


def full(loaded: set[str]) -> bool:
    """Whether a run took the full path (it read the settings with pydantic)."""
    return "pydantic" in loaded and "pipeline.config.schema" in loaded


def options(home: Path, given: list[str]) -> list[str]:
    return [arg.replace("~", str(home)) for arg in given]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_recorded_status_says_what_the_full_path_says(tmp_path, monkeypatch, layout):
    config, given, env = LAYOUTS[layout]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    home = make_home(tmp_path, config, env)
    first, loaded = persona(home, [*options(home, given), "status"], **env)
    assert full(loaded) and first[2] == 0, first
    for args in (["status"], ["status", "--json"], ["status", "-p", "bob"], ["status", "--profile=alice", "--json"]):
        args = [*options(home, given), *args]
        ours, loaded = persona(home, args, **env)
        assert ours == typers(home, args, **env)
        assert full(loaded) == (layout in FULL)
    assert len(records(home)) == FULL.get(layout, 1)


@pytest.mark.parametrize("args", [["status"], ["status", "--json"], ["status", "-p", "bob"]])
def test_a_recorded_status_imports_neither_pydantic_nor_the_settings_models(tmp_path, args):
    home = make_home(tmp_path, CONFIG, {})
    persona(home, ["-c", str(home / "persona.yaml"), *args])
    _, loaded = persona(home, ["-c", str(home / "persona.yaml"), *args])
    assert "pipeline.cli.settings_record" in loaded
    assert not {module for module in loaded if module.startswith(("pydantic", "typer"))}
    assert not loaded & {"pipeline.config.schema", "pipeline.config.sections", "pipeline.config.load"}


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A home with a config file whose settings status has recorded (the next status reads them)."""
    home = make_home(tmp_path, CONFIG, {})
    assert full(persona(home, ["-c", str(home / "persona.yaml"), "status"])[1])
    assert not full(persona(home, ["-c", str(home / "persona.yaml"), "status"])[1])
    return home


def _edit_config(home: Path) -> dict[str, str]:
    with (home / "persona.yaml").open("a") as file:
        file.write("triggers:\n  interval: 9\n")
    return {}


def _local_twin(home: Path) -> dict[str, str]:
    (home / "persona.local.yaml").write_text("cap:\n  token_cap: 700\n")
    return {}


def _default_file(home: Path) -> dict[str, str]:  # a searched path that was missing, now there
    (home / ".hermes" / "mnemosyne" / "persona.yaml").write_text("triggers:\n  daily_sync_hour: 5\n")
    return {}


def _package(home: Path) -> dict[str, str]:  # what an upgrade does to the package's stamp
    for path in records(home):
        document = json.loads(path.read_text())
        path.write_text(json.dumps({**document, "package": "0:0:0 0:0:0 0:0:0"}))
    return {}


CHANGES = {
    "the config file's bytes": _edit_config,
    "its local twin appears": _local_twin,
    "the default config file appears": _default_file,
    "the package": _package,
    "an env variable": lambda home: {"MNEMOSYNE_PERSONA_TRIGGERS__INTERVAL": "7"},
    "an env variable in lower case": lambda home: {"mnemosyne_persona_triggers__interval": "7"},
    "a legacy env variable": lambda home: {"MNEMOSYNE_PERSONA_INTERVAL": "8"},
    "the Hermes home": lambda home: {"HERMES_HOME": str(home / "elsewhere")},
}


@pytest.mark.parametrize("change", CHANGES)
def test_each_part_of_the_key_changed_alone_sends_status_to_the_full_path(recorded, change):
    env = CHANGES[change](recorded)
    args = ["-c", str(recorded / "persona.yaml"), "status"]
    ours, loaded = persona(recorded, args, **env)
    assert full(loaded)
    assert ours == typers(recorded, args, **env)


def test_another_global_option_is_another_key(recorded):
    args = ["-c", str(recorded / "persona.yaml"), "--set", "triggers.interval=3", "status"]
    ours, loaded = persona(recorded, args)
    assert full(loaded) and "interval 3" in ours[0]
    assert ours == typers(recorded, args)


def _garbage(path: Path) -> None:
    path.write_bytes(b"\xff{not json")


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _wrong_shape(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), "settings": ["triggers"]}))


def _foreign_mode(path: Path) -> None:
    path.chmod(0o644)


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path, 0o600)


@pytest.mark.parametrize("spoil", [_garbage, _truncated, _wrong_shape, _foreign_mode, _fifo],
                         ids=lambda spoil: spoil.__name__.strip("_"))
def test_a_record_in_doubt_is_ignored(recorded, spoil):
    [path] = records(recorded)
    spoil(path)
    args = ["-c", str(recorded / "persona.yaml"), "status", "--json"]
    ours, loaded = persona(recorded, args)
    assert full(loaded)
    assert ours == typers(recorded, args)


def test_the_record_is_private(recorded):
    [path] = records(recorded)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert "answers tersely" not in path.read_text()  # settings only: no fact's text


def test_two_hermes_profiles_never_read_each_others_record(recorded):
    """The sticky Hermes profile picks another home: its own database, its own record."""
    args = ["-c", str(recorded / "persona.yaml"), "status"]
    (recorded / ".hermes" / "profiles" / "work").mkdir(parents=True)
    (recorded / ".hermes" / "active_profile").write_text("work\n")
    settings = load_settings(config_files=[recorded / "persona.yaml"])
    settings.store.path.parent.mkdir(parents=True)
    with PersonaStore.from_settings(settings) as store:
        store.add("works late.", topic="hours")
    for _ in range(2):
        ours, loaded = persona(recorded, args)
        assert ours == typers(recorded, args)
    assert not full(loaded)
    assert "profiles/work/mnemosyne/data/mnemosyne.db" in ours[0]
    assert len(records(recorded)) == 1  # the default home's, untouched
    assert len(list((recorded / ".hermes" / "profiles" / "work").rglob("settings/*.json"))) == 1


def test_a_fifo_among_the_searched_files_does_not_hang_status(recorded):
    os.mkfifo(recorded / "persona.local.yaml", 0o600)
    assert deliver.state_of(str(recorded / "persona.local.yaml")).startswith(deliver.OTHER)
    args = ["-c", str(recorded / "persona.yaml"), "status"]
    assert persona(recorded, args)[0] == typers(recorded, args)


@pytest.mark.parametrize("args", [["status"], ["status", "--json"]])
def test_python_m_pipeline_answers_from_the_record_as_the_full_path_does(recorded, args):
    args = ["-c", str(recorded / "persona.yaml"), *args]
    environment = {"PATH": os.environ["PATH"], "HOME": str(recorded), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                          env=environment, cwd=recorded / "work", timeout=120, check=False)
    assert (done.stdout, done.stderr, done.returncode) == typers(recorded, args)
