"""`persona mcp` as a real subprocess, driven by the official SDK client over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from ..conftest import REPO, add_memory, failed_cleanly, write

pytestmark = pytest.mark.anyio


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    from pipeline import PersonaStore, load_settings, run_pipeline

    settings = load_settings(overrides={"store.path": str(tmp_path / "m.db"),
                                        "injection.file": str(tmp_path / "persona.md")})
    with PersonaStore.from_settings(settings) as store:
        run_pipeline(settings, store=store)  # the persona file exists, as a render of ours
    add_memory(tmp_path / "m.db", "m1", "Never force-push.", metadata='{"topic": "git"}')
    return tmp_path


def server(workdir: Path) -> StdioServerParameters:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(workdir),
        "PYTHONPATH": str(REPO),
        "MNEMOSYNE_PERSONA_STORE__PATH": str(workdir / "m.db"),
        "MNEMOSYNE_PERSONA_FILE": str(workdir / "persona.md"),
        "MNEMOSYNE_PERSONA_ENABLED": "true",
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env, cwd=str(REPO))


VALID_CALLS = {
    "persona_promote": {"memory_id": "m1", "tier": "permanent", "reason": "said twice"},
    "mnemosyne_persona_promote": {"memory_id": "m1"},
    "persona_list": {},
    "mnemosyne_persona_list": {"tier": "permanent"},
    "persona_reinforce": {"persona_id": 1},
    "mnemosyne_persona_reinforce": {"persona_id": 1},
    "persona_add": {"content": "Answers tersely.", "topic": "style"},
    "persona_replace": {"old_text": "tersely", "content": "Answers in one line."},  # #3 supersedes #2
    "persona_render": {"dry_run": True},
    "persona_status": {},
    "persona_inject_preview": {},
    "persona_session_refresh": {"session_id": "s1"},
    "persona_demote": {"persona_id": 3, "reason": "test"},
    "mnemosyne_persona_demote": {"persona_id": 1, "reason": ""},
    "persona_forget": {},  # the id of a fact made just before the call
    "persona_review": {},  # list
}

INVALID_CALLS = {
    "persona_promote": ({"memory_id": "m1", "tier": "forever"}, "tier"),
    "persona_list": ({"tier": "eternal"}, "tier"),
    "persona_reinforce": ({"persona_id": "one"}, "persona_id"),
    "persona_add": ({"content": "x", "topic": "t", "confidence": 7}, "confidence"),
    "persona_render": ({"target": "html"}, "unknown target 'html'"),
    "persona_status": ({"profile": 5}, "profile"),
    "persona_inject_preview": ({"session_id": []}, "session_id"),
    "persona_session_refresh": ({}, "session_id"),
    "persona_demote": ({"persona_id": 0}, "persona_id"),
    "persona_replace": ({"content": "x"}, "persona_id or a piece of its old_text"),
    "persona_review": ({"action": "accept"}, "take a proposal id"),
    "mnemosyne_persona_demote": ({"persona_id": 2**63}, "persona_id"),
}


def fact_to_forget(workdir: Path) -> int:
    from pipeline import PersonaStore

    with PersonaStore(workdir / "m.db") as store:
        return store.add("Lives at a private address.", topic="home").fact.id


@pytest.mark.slow
async def test_every_listed_tool_is_callable(workdir):
    async with Client(server(workdir)) as client:
        tools = (await client.list_tools()).tools
        assert {tool.name for tool in tools} == set(VALID_CALLS)  # nothing advertised goes untested
        for tool in tools:
            assert tool.description and tool.input_schema["type"] == "object"
            for name, spec in tool.input_schema.get("properties", {}).items():
                assert spec.get("description"), f"{tool.name}.{name} lacks a description"
        for name, args in VALID_CALLS.items():  # in an order where each call's ids exist
            if name == "persona_forget":
                args = {"persona_id": fact_to_forget(workdir)}
            result = await client.call_tool(name, args)
            assert not result.is_error, (name, result.content)
            assert result.structured_content["status"] == "ok", name


@pytest.mark.parametrize("name", sorted(INVALID_CALLS))
async def test_an_invalid_argument_is_a_tool_error(workdir, name):
    args, message = INVALID_CALLS[name]
    async with Client(server(workdir)) as client:
        result = await client.call_tool(name, args)
        assert result.is_error and message in result.content[0].text
        assert not (await client.call_tool("persona_list", {})).is_error  # the server survived


async def test_domain_errors_carry_our_message_in_the_contracts_shape(workdir):
    async with Client(server(workdir)) as client:
        result = await client.call_tool("mnemosyne_persona_reinforce", {"persona_id": 99})
        assert result.is_error
        assert result.structured_content == {"status": "error",
                                             "error": "no persona fact with id 99 in profile 'default'"}
        assert json.loads(result.content[0].text) == result.structured_content
        result = await client.call_tool("persona_promote", {"memory_id": "nope"})
        assert "no memory with id nope" in result.structured_content["error"]


@pytest.mark.slow
async def test_promote_list_render_inject_round_trip(workdir):
    async with Client(server(workdir)) as client:
        await client.call_tool("persona_add", {"content": "Answers tersely.", "topic": "style", "tier": "permanent"})
        promoted = (await client.call_tool("mnemosyne_persona_promote", {"memory_id": "m1"})).structured_content
        assert promoted["created"] and promoted["topic"] == "git" and promoted["tier"] == "long_term"
        assert promoted["rendered"] == ["markdown"] and promoted["render_warnings"] == []  # rendered at once
        listed = (await client.call_tool("mnemosyne_persona_list", {})).structured_content
        assert listed["count"] == 2
        assert [f["content"] for f in listed["personas"]] == ["Answers tersely.", "Never force-push."]
        rendered = (await client.call_tool("persona_render", {})).structured_content
        assert not rendered["targets"][0]["changed"] and rendered["targets"][0]["facts_extracted"] == 2
        preview = (await client.call_tool("persona_inject_preview", {})).structured_content
        assert preview["appendix"].startswith("\n\n# L3 Persona (Active Behavioral Rules)\n")
        assert "- Answers tersely." in preview["block"] and preview["tokens"] <= preview["budget"]
    assert (workdir / "persona.md").read_text() == preview["block"]


async def test_stdout_carries_only_the_protocol(workdir):
    # The client would fail to parse any stray stdout line; a broken config must not print either.
    params = server(workdir)
    params.env["MNEMOSYNE_PERSONA_TOKEN_CAP"] = "lots"
    async with Client(params) as client:
        result = await client.call_tool("persona_list", {})
        assert result.is_error and "MNEMOSYNE_PERSONA_TOKEN_CAP" in result.structured_content["error"]


# -- without the optional extra --------------------------------------------------


def test_mcp_without_the_extra_is_one_clear_error(tmp_path):
    fake = write(tmp_path / "shadow" / "mcp" / "__init__.py", "raise ImportError('No module named mcp')\n")
    done = subprocess.run([sys.executable, "-m", "pipeline", "mcp"], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                               "PYTHONPATH": f"{fake.parent.parent}{os.pathsep}{REPO}"})
    said = failed_cleanly(done)
    # however persona-tier was installed (pip, pipx, uv tool; a checkout or a wheel): never "in the checkout"
    assert "optional extra 'mcp': pip install 'persona-tier[mcp]'" in said and "checkout (" not in said
    assert "pipx install --force 'SOURCE[mcp]'" in said and "uv tool install --force 'SOURCE[mcp]'" in said
