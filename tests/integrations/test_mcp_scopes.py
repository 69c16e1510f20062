"""Scopes over MCP, with the real SDK client over stdio: the tools' `scope: project` is the project of the client's
first root (asked of the client, a real `roots/list` round trip), `scope: host` is the `mcp` agent, and a client
without roots gets a clear error for a project scope, never a guess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from .test_mcp import server, workdir  # noqa: F401 (the fixture)

pytestmark = pytest.mark.anyio


def repository(path: Path, remote: str) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return path


def roots(*directories: Path):
    async def listed(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=directory.as_uri(), name=directory.name)
                                            for directory in directories])

    return listed


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026-07-28 protocol's input-required round, roots/list
async def test_a_project_scope_is_the_clients_first_roots_project(workdir, mode):  # noqa: F811
    shop = repository(workdir / "shop", "git@github.com:acme/shop.git")
    blog = repository(workdir / "blog", "https://github.com/acme/blog")
    async with Client(server(workdir), list_roots_callback=roots(shop, blog), mode=mode) as client:
        added = await client.call_tool("persona_add", {"content": "Uses pnpm, never npm.", "topic": "tools",
                                                       "scope": "project"})
        assert not added.is_error, added.content
        assert added.structured_content["fact"]["scope"] == "project:github.com/acme/shop"
        mine = await client.call_tool("persona_add", {"content": "Asks before shell commands.", "topic": "safety",
                                                      "scope": "host"})
        assert mine.structured_content["fact"]["scope"] == "host:mcp"
        replaced = await client.call_tool("persona_replace", {"old_text": "pnpm", "content": "Uses bun, never npm."})
        assert replaced.structured_content["fact"]["scope"] == "project:github.com/acme/shop"  # kept
    async with Client(server(workdir), list_roots_callback=roots(blog), mode=mode) as client:  # another workspace
        added = await client.call_tool("persona_add", {"content": "Deploys with hugo.", "topic": "deploy",
                                                       "scope": "project"})
        assert added.structured_content["fact"]["scope"] == "project:github.com/acme/blog"
        plain = await client.call_tool("persona_add", {"content": "Answers tersely.", "topic": "style"})
        assert plain.structured_content["fact"]["scope"] is None  # no scope: global, and no roots asked


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_without_roots_gets_a_clear_error_for_a_project_scope(workdir, mode):  # noqa: F811
    async with Client(server(workdir), mode=mode) as client:
        refused = await client.call_tool("persona_add", {"content": "Uses pnpm.", "topic": "tools",
                                                         "scope": "project"})
        assert refused.is_error
        assert "scope project needs the session's working directory" in json.loads(refused.content[0].text)["error"]
        listed = await client.call_tool("persona_list", {})
        assert "Uses pnpm." not in json.dumps(listed.structured_content)  # nothing was written
        assert not (await client.call_tool("persona_add", {"content": "Answers tersely.", "topic": "style",
                                                           "scope": "global"})).is_error
