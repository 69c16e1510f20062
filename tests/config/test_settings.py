"""The settings layer: precedence (one test per pair), legacy names, files, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline import ConfigError, Settings, load_settings, load_settings_with_provenance, resolve_target
from pipeline.config.edit import reference_yaml
from pipeline.config.files import load_file_layer

from ..conftest import REPO, cli, failed_cleanly, write


def cap(**kwargs) -> int:
    return load_settings(**kwargs).cap.token_cap


@pytest.fixture
def yaml_file(tmp_path: Path) -> Path:
    return write(tmp_path / "persona.yaml", "cap:\n  token_cap: 1100\n")


# -- defaults -----------------------------------------------------------------


def test_the_existing_tiers_five_defaults_are_kept():
    settings = load_settings()
    assert settings.injection.enabled is False
    assert settings.injection.file == Path("~/.hermes/memory/persona.md").expanduser()
    assert settings.cap.token_cap == 1500
    assert settings.triggers.interval == 50
    assert settings.triggers.daily_sync_hour == 3


def test_default_paths_follow_hermes_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    settings = load_settings()
    assert settings.injection.file == tmp_path / "hh" / "memory" / "persona.md"
    assert settings.store.path == tmp_path / "hh" / "mnemosyne" / "data" / "mnemosyne.db"


def test_every_field_has_a_description():
    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} lacks a description"
            annotation = field.annotation
            if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
                walk(annotation)

    walk(Settings)


# -- precedence: one test per pair --------------------------------------------


def test_yaml_beats_default(yaml_file):
    assert cap(config_files=[yaml_file]) == 1100


def test_legacy_env_beats_yaml(yaml_file, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "1200")
    assert cap(config_files=[yaml_file]) == 1200


def test_env_beats_yaml(yaml_file, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_CAP__TOKEN_CAP", "1300")
    assert cap(config_files=[yaml_file]) == 1300


def test_nested_env_beats_its_legacy_twin(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "1200")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_CAP__TOKEN_CAP", "1300")
    assert cap() == 1300


def test_override_beats_env(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_CAP__TOKEN_CAP", "1300")
    assert cap(overrides={"cap.token_cap": 1400}) == 1400


def test_override_beats_legacy_env(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "1200")
    assert cap(overrides={"cap": {"token_cap": 1400}}) == 1400


def test_override_beats_yaml(yaml_file):
    assert cap(config_files=[yaml_file], overrides={"cap.token_cap": 1400}) == 1400


def test_later_config_file_beats_earlier(yaml_file, tmp_path):
    later = write(tmp_path / "later.yaml", "cap:\n  token_cap: 1111\n")
    assert cap(config_files=[yaml_file, later]) == 1111
    assert cap(config_files=[later, yaml_file]) == 1100


def test_local_file_beside_a_file_overrides_it(yaml_file, tmp_path):
    write(tmp_path / "persona.local.yaml", "cap:\n  token_cap: 1150\n")
    settings, provenance = load_settings_with_provenance(config_files=[yaml_file])
    assert settings.cap.token_cap == 1150
    assert provenance[("cap", "token_cap")] == f"{tmp_path / 'persona.local.yaml'}:2"


def test_files_merge_deeply_rather_than_replace_sections(tmp_path):
    first = write(tmp_path / "a.yaml", "cap:\n  token_cap: 900\n  counter: heuristic\n")
    second = write(tmp_path / "b.yaml", "cap:\n  token_cap: 800\n")
    settings = load_settings(config_files=[first, second])
    assert (settings.cap.token_cap, settings.cap.counter) == (800, "heuristic")


# -- legacy names ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "path", "expected"),
    [
        ("MNEMOSYNE_PERSONA_ENABLED", "true", ("injection", "enabled"), True),
        ("MNEMOSYNE_PERSONA_FILE", "/tmp/x/persona.md", ("injection", "file"), Path("/tmp/x/persona.md")),
        ("MNEMOSYNE_PERSONA_TOKEN_CAP", "700", ("cap", "token_cap"), 700),
        ("MNEMOSYNE_PERSONA_INTERVAL", "10", ("triggers", "interval"), 10),
        ("MNEMOSYNE_PERSONA_DAILY_SYNC_HOUR", "25", ("triggers", "daily_sync_hour"), 25),
    ],
)
def test_each_legacy_name_maps_onto_its_nested_field(monkeypatch, name, value, path, expected):
    monkeypatch.setenv(name, value)
    settings, provenance = load_settings_with_provenance()
    assert getattr(getattr(settings, path[0]), path[1]) == expected
    assert provenance[path] == f"env {name} (legacy)"


# -- environment sections -------------------------------------------------------

SECTIONED = """\
default:
  cap:
    token_cap: 1000
    counter: cl100k_base
staging:
  cap:
    token_cap: 600
"""


def test_default_section_applies_without_an_env(tmp_path):
    settings = load_settings(config_files=[write(tmp_path / "p.yaml", SECTIONED)])
    assert (settings.cap.token_cap, settings.cap.counter) == (1000, "cl100k_base")


def test_mnemosyne_env_selects_a_section_and_deep_merges_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_ENV", "staging")
    settings = load_settings(config_files=[write(tmp_path / "p.yaml", SECTIONED)])
    # dynaconf without merge would have replaced the whole `cap` mapping.
    assert (settings.cap.token_cap, settings.cap.counter) == (600, "cl100k_base")


def test_env_name_argument_beats_mnemosyne_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_ENV", "nope")
    settings = load_settings(config_files=[write(tmp_path / "p.yaml", SECTIONED)], env_name="staging")
    assert settings.cap.token_cap == 600


# -- which files are read -----------------------------------------------------


def test_default_file_honours_hermes_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    write(tmp_path / "hh" / "mnemosyne" / "persona.yaml", "cap:\n  token_cap: 321\n")
    assert cap() == 321


def test_default_file_under_home_when_no_hermes_home(tmp_path):
    write(tmp_path / "home" / ".hermes" / "mnemosyne" / "persona.yaml", "cap:\n  token_cap: 322\n")
    assert cap() == 322


def test_mnemosyne_persona_config_names_the_files(tmp_path, monkeypatch):
    a = write(tmp_path / "a.yaml", "cap:\n  token_cap: 500\n")
    b = write(tmp_path / "b.yaml", "cap:\n  counter: heuristic\n")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_CONFIG", f"{a}:{b}")
    settings = load_settings()
    assert (settings.cap.token_cap, settings.cap.counter) == (500, "heuristic")


def test_a_named_config_file_that_is_missing_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"config file .*missing\.yaml does not exist"):
        load_settings(config_files=[tmp_path / "missing.yaml"])


def test_settings_are_not_frozen_at_import(monkeypatch):
    assert cap() == 1500
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "999")
    assert cap() == 999


# -- dynaconf's footguns do not apply to our loader ----------------------------


def test_at_prefixed_strings_stay_literal(tmp_path):
    path = write(
        tmp_path / "p.yaml", 'cap:\n  truncation_note: "@format {env[HOME]}"\ninjection:\n  header: "@int 12"\n'
    )
    settings = load_settings(config_files=[path])
    assert settings.cap.truncation_note == "@format {env[HOME]}"
    assert settings.injection.header == "@int 12"


def test_dynaconf_variables_do_not_reach_the_settings(monkeypatch):
    monkeypatch.setenv("DYNACONF_CAP", '{"token_cap": 5}')
    monkeypatch.setenv("DYNACONF_CAP__TOKEN_CAP", "5")
    monkeypatch.setenv("MNEMOSYNE_CAP__TOKEN_CAP", "5")
    assert cap() == 1500


def test_keys_are_not_case_folded(tmp_path):
    path = write(tmp_path / "p.yaml", "CAP:\n  token_cap: 5\n")
    with pytest.raises(ConfigError, match=r"unknown key CAP in .*p\.yaml:1"):
        load_settings(config_files=[path])


def test_a_file_cannot_add_top_level_keys(tmp_path):
    path = write(tmp_path / "p.yaml", "settings_files: [x]\n")
    with pytest.raises(ConfigError, match="unknown key settings_files"):
        load_settings(config_files=[path])


# -- bad input ----------------------------------------------------------------


def test_bad_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path / "p.yaml", "cap:\n  token_cap: 5\n  counter: [unclosed\n")
    with pytest.raises(ConfigError, match=r"p\.yaml:\d+:\d+: bad YAML"):
        load_settings(config_files=[path])


def test_unknown_yaml_key_names_path_file_line_and_closest(tmp_path):
    path = write(tmp_path / "p.yaml", "cap:\n  tokn_cap: 5\n")
    with pytest.raises(
        ConfigError, match=r"unknown key cap\.tokn_cap in .*p\.yaml:2 \(did you mean cap\.token_cap\?\)"
    ):
        load_settings(config_files=[path])


def test_unknown_prefixed_env_variable_is_an_error(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_CAP__TOKN_CAP", "5")
    with pytest.raises(ConfigError, match=r"unknown key cap\.tokn_cap in env MNEMOSYNE_PERSONA_CAP__TOKN_CAP"):
        load_settings()


def test_unknown_top_level_env_variable_is_an_error(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKENCAP", "5")
    with pytest.raises(ConfigError, match="unknown environment variable MNEMOSYNE_PERSONA_TOKENCAP"):
        load_settings()


def test_unknown_override_key_is_an_error():
    with pytest.raises(
        ConfigError, match=r"unknown key cap\.tokn in override cap\.tokn \(did you mean cap\.token_cap\?\)"
    ):
        load_settings(overrides={"cap.tokn": 5})


def test_wrong_type_in_yaml_names_key_value_and_source(tmp_path):
    path = write(tmp_path / "p.yaml", "cap:\n  token_cap: lots\n")
    with pytest.raises(ConfigError, match=r"cap\.token_cap: .*valid integer.*'lots'.*p\.yaml:2"):
        load_settings(config_files=[path])


@pytest.mark.parametrize("value", ["", "1500 tokens"])
def test_non_integer_legacy_token_cap_is_an_error(monkeypatch, value):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", value)
    with pytest.raises(ConfigError, match=r"cap\.token_cap: .*MNEMOSYNE_PERSONA_TOKEN_CAP \(legacy\)"):
        load_settings()


def test_non_boolean_enabled_is_an_error_not_false(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_ENABLED", "enabled")
    with pytest.raises(ConfigError, match=r"injection\.enabled: .*boolean.*'enabled'"):
        load_settings()


def test_all_problems_are_reported_together(tmp_path, monkeypatch):
    path = write(tmp_path / "p.yaml", "cap:\n  tokn_cap: 5\n  counter: nope\n")
    monkeypatch.setenv("MNEMOSYNE_PERSONA_ENABLED", "enabled")
    with pytest.raises(ConfigError) as caught:
        load_settings(config_files=[path])
    assert len(caught.value.problems) == 3
    assert "3 problems" in str(caught.value)


def test_a_parse_error_in_a_later_file_names_that_file(tmp_path):
    a = write(tmp_path / "a.yaml", "cap:\n  bogus: 1\n")
    b = write(tmp_path / "b.yaml", "cap:\n  token_cap: [\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(config_files=[a, b])
    assert len(caught.value.problems) == 1  # a parse error stops before key checks
    assert "b.yaml" in caught.value.problems[0]


# -- the shipped reference -----------------------------------------------------


def test_repo_reference_config_holds_exactly_the_model_defaults():
    layer = load_file_layer(REPO / "config" / "persona.yaml", None)
    assert Settings(**layer.data).model_dump() == Settings().model_dump()


def test_repo_reference_config_is_the_generated_one():
    assert (REPO / "config" / "persona.yaml").read_text(encoding="utf-8") == reference_yaml()


def test_a_structured_setting_from_env_must_be_json(monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TARGETS", "markdown")
    with pytest.raises(ConfigError, match="environment variable MNEMOSYNE_PERSONA_TARGETS must hold JSON"):
        load_settings()
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TARGETS", '{"markdown": {"budget": 900}}')
    assert resolve_target(load_settings(), "markdown").budget == 900


def test_merge_tokens_stay_literal_too(tmp_path):
    path = write(tmp_path / "p.yaml", 'cap:\n  truncation_note: "@merge {a = 1}"\n')
    assert load_settings(config_files=[path]).cap.truncation_note == "@merge {a = 1}"


def test_default_database_follows_mnemosyne(monkeypatch, tmp_path):
    from pipeline.config.urls import db_path

    assert db_path(load_settings()) == tmp_path / "home" / ".hermes" / "mnemosyne" / "data" / "mnemosyne.db"
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "hh"))
    assert db_path(load_settings()) == tmp_path / "hh" / "mnemosyne" / "data" / "mnemosyne.db"
    monkeypatch.setenv("MNEMOSYNE_DATA_DIR", str(tmp_path / "data"))
    assert db_path(load_settings()) == tmp_path / "data" / "mnemosyne.db"
    assert db_path(load_settings(overrides={"store.path": str(tmp_path / "x.db")})) == tmp_path / "x.db"


@pytest.mark.parametrize("boundary", ["## \n", "a\rb", "\u2028## "])
def test_a_section_boundary_with_a_line_break_is_refused(boundary):
    with pytest.raises(ConfigError, match=r"targets\.markdown\.boundary: .*without a line break"):
        load_settings(overrides={"targets.markdown.boundary": boundary})


@pytest.mark.parametrize("name", ["my\ttarget", "line\nbreak", " ", "x" * 101, "bell\x07"])
def test_a_target_name_with_control_characters_is_refused_by_name(tmp_path, name):
    # Names travel in tab-separated block announcements: a tab in one once filed a new block under the
    # wrong target, and injectors kept the old one.
    config = tmp_path / "persona.yaml"
    config.write_text(f"targets:\n  {json.dumps(name)}:\n    output: store\n")
    with pytest.raises(ConfigError, match=r"target name .* must be 1-100 characters with no control characters"):
        load_settings(config_files=[config])
    assert load_settings(overrides={"targets.chat.output": "store"}).targets["chat"].output == "store"


def test_the_old_name_store_session_is_read_as_store_profile_with_a_warning(tmp_path, monkeypatch, caplog):
    yaml = write(tmp_path / "p.yaml", "store:\n  session: from-yaml\n")
    with caplog.at_level("WARNING", logger="pipeline.config.aliases"):
        assert load_settings(config_files=[yaml]).store.profile == "from-yaml"
        assert load_settings(overrides={"store.session": "bob"}).store.profile == "bob"
        monkeypatch.setenv("MNEMOSYNE_PERSONA_STORE__SESSION", "carol")
        assert load_settings().store.profile == "carol"
    said = " ".join(record.getMessage() for record in caplog.records)
    assert "store.session" in said and "call it store.profile" in said
    # Where one source gives both, the new name wins.
    assert load_settings(overrides={"store.session": "old", "store.profile": "new"}).store.profile == "new"


def test_provenance_follows_the_old_name_to_the_new_one(tmp_path):
    yaml = write(tmp_path / "p.yaml", "store:\n  session: alice\n")
    settings, provenance = load_settings_with_provenance(config_files=[yaml])
    assert settings.store.profile == "alice"
    assert provenance[("store", "profile")].endswith("p.yaml:2")


# -- targets ---------------------------------------------------------------------


def test_two_targets_on_one_file_are_refused(tmp_path, seeded):
    config = write(tmp_path / "two.yaml", "targets:\n  json:\n    template: persona.jsonl.j2\n")
    line = failed_cleanly(cli(tmp_path, "--db", "m.db", "-c", str(config), "render"))
    assert "targets 'markdown' and 'json' both write" in line
    same = write(tmp_path / "same.yaml", "targets:\n  a:\n    path: out.md\n  b:\n    path: ./out.md\n")
    assert "both write" in failed_cleanly(cli(tmp_path, "--db", "m.db", "-c", str(same), "render"))


def test_adding_a_target_keeps_the_default_one_and_null_removes_it(tmp_path):
    added = write(tmp_path / "a.yaml", "targets:\n  json:\n    template: persona.jsonl.j2\n    path: p.jsonl\n")
    assert sorted(load_settings(config_files=[added]).targets) == ["json", "markdown"]
    removed = write(tmp_path / "r.yaml", "injection:\n  target: json\ntargets:\n  markdown: null\n  json:\n"
                                         "    template: persona.jsonl.j2\n")
    assert sorted(load_settings(config_files=[removed]).targets) == ["json"]


# -- values, variables and files that used to crash: one line, exit 1, no traceback ----


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


def test_lower_case_variables_are_refused_like_unknown_ones(tmp_path, seeded):
    for name in ("mnemosyne_persona_cap__token_cap", "Mnemosyne_Persona_File", "mnemosyne_persona_tokn"):
        line = failed_cleanly(cli(tmp_path, "--db", "m.db", "status", env={name: "5"}))
        assert name in line and "upper case" in line


def test_a_fifo_at_the_default_config_path_hangs_nothing(tmp_path):
    config = tmp_path / "home" / ".hermes" / "mnemosyne" / "persona.yaml"
    config.parent.mkdir(parents=True)
    os.mkfifo(config)
    for args in (["status"], ["list"], ["config", "show"]):
        line = failed_cleanly(cli(tmp_path, *args, timeout=20))
        assert "persona.yaml" in line and "not a regular file" in line
