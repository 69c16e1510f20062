"""The error contract (docs/architecture.md, "Errors by layer"): each floor raises its own typed error, through the
public entry points, and the boundaries turn them into one CLI line or one JSON answer."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import pipeline.errors
from pipeline import (
    ConfigError,
    FileSystemError,
    NotFoundError,
    PersonaError,
    PersonaStore,
    RegionId,
    StageError,
    StoreError,
    TemplateError,
    load_settings,
    plan,
    run_pipeline,
    write_region,
)
from pipeline.cli import app
from pipeline.integrations.tools import PersonaTools, call_json

from .conftest import local_settings, runner

BEGIN = "<!-- persona-tier:begin profile=default -->"


def test_every_error_is_a_persona_error_that_says_what_it_means() -> None:
    for name in pipeline.errors.__all__:
        error = getattr(pipeline.errors, name)
        assert issubclass(error, PersonaError) and "__doc__" in vars(error) and inspect.getdoc(error), name


def test_fs_raises_a_file_system_error_for_a_file_it_cannot_use(tmp_path: Path) -> None:
    broken = tmp_path / "AGENTS.md"
    broken.write_text(f"# Mine\n\n{BEGIN}\nnever closed\n", encoding="utf-8")
    with pytest.raises(FileSystemError, match=r"line 3: a region begins but never ends .*nothing was written"):
        write_region(broken, "- Answers tersely.\n", RegionId("default"))
    (tmp_path / "dir.md").mkdir()
    with pytest.raises(FileSystemError, match="cannot write the persona region of"):
        write_region(tmp_path / "dir.md", "- Answers tersely.\n", RegionId("default"))


def test_a_file_system_error_stops_the_write_stage_and_the_cli_prints_one_line(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    settings.injection.file.mkdir()  # type: ignore[union-attr]
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        with pytest.raises(FileSystemError, match="cannot write persona file") as raised:
            run_pipeline(settings, store=store)
    assert isinstance(raised.value, StageError)  # a render that cannot write its file is a failed stage
    result = runner.invoke(app, ["--db", str(settings.store.path), "--set", f"injection.file={settings.injection.file}",
                                 "render"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: cannot write persona file {settings.injection.file}: it is a directory")


def test_config_raises_a_config_error_and_the_cli_prints_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^invalid configuration: .*nosuch") as raised:
        load_settings(overrides={"store.nosuch": 1})
    assert not isinstance(raised.value, StageError)
    result = runner.invoke(app, ["--db", str(tmp_path / "m.db"), "--set", "store.nosuch=1", "list"])
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: invalid configuration: ")


def test_an_unknown_target_is_a_stage_error_not_a_config_or_file_one(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    with PersonaStore.from_settings(settings) as store, pytest.raises(StageError) as raised:
        run_pipeline(settings, store=store, targets=["html"])
    assert not isinstance(raised.value, ConfigError | FileSystemError)
    result = runner.invoke(app, ["--db", str(settings.store.path), "render", "--target", "html"])
    assert result.exit_code == 1 and result.stderr == "error: unknown target 'html'; known targets: markdown\n"


def test_stages_raise_a_stage_error_for_a_bad_pipeline() -> None:
    with pytest.raises(StageError, match="unknown stage 'rnak'") as raised:
        plan(["extract", "rnak", "render", "cap", "write"])
    assert not isinstance(raised.value, FileSystemError)


def test_the_store_raises_store_errors(tmp_path: Path) -> None:
    with PersonaStore(tmp_path / "m.db") as store, pytest.raises(NotFoundError, match="no persona fact with id 999"):
        store.get(999)
    with PersonaStore(tmp_path / "m.db", readonly=True) as store, pytest.raises(StoreError, match="read-only"):
        store.add("Answers tersely.", topic="style")


def test_render_raises_a_template_error(tmp_path: Path) -> None:
    settings = local_settings(tmp_path, {"targets.markdown.template": "nosuch.md.j2"})
    with PersonaStore.from_settings(settings) as store:
        store.add("Answers tersely.", topic="style")
        with pytest.raises(TemplateError, match=r"nosuch\.md\.j2"):
            run_pipeline(settings, store=store)


def test_a_tool_call_turns_any_error_into_one_json_answer(tmp_path: Path) -> None:
    settings = local_settings(tmp_path)
    tools = PersonaTools(lambda: settings).catalog(legacy=False)
    missing = json.loads(call_json(tools, "persona_demote", {"persona_id": 999}))
    assert missing["status"] == "error" and "no persona fact with id 999" in missing["error"]
    unknown = json.loads(call_json(tools, "persona_render", {"target": "html"}))
    assert unknown == {"status": "error", "error": "unknown target 'html'; known targets: markdown"}
