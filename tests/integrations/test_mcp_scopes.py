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
        assert plain.structured_content["fact"]["scope"] == "global"  # no scope: global, and no roots asked


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


def seed_scopes(place: Path, shop: Path, blog: Path) -> None:
    from pipeline import PersonaStore
    from pipeline.fs.projects import project_of

    with PersonaStore(place / "m.db") as store:
        store.add("Answers tersely.", topic="style")
        store.add("Uses pnpm in the shop.", topic="tools", scope=f"project:{project_of(shop).identity}")
        store.add("Deploys the blog with hugo.", topic="deploy", scope=f"project:{project_of(blog).identity}")
        store.add("Over MCP, cites file paths.", topic="style", scope="host:mcp")
        store.add("In Cursor, asks first.", topic="safety", scope="host:cursor")


async def read_all(client: Client) -> tuple[str, str]:
    resource = await client.read_resource("persona://default/markdown")
    prompt = await client.get_prompt("persona", {})
    return resource.contents[0].text, prompt.messages[0].content.text


async def test_a_read_shows_the_roots_project_the_mcp_agents_facts_and_no_other(workdir):  # noqa: F811
    shop = repository(workdir / "shop", "git@github.com:acme/shop.git")
    blog = repository(workdir / "blog", "https://github.com/acme/blog")
    seed_scopes(workdir, shop, blog)
    async with Client(server(workdir), list_roots_callback=roots(shop), mode="legacy") as client:
        for text in await read_all(client):
            assert "Answers tersely." in text and "Over MCP, cites file paths." in text
            assert "Uses pnpm in the shop." in text
            assert "hugo" not in text and "In Cursor" not in text
    for mode in ("legacy", "auto"):  # no roots, or a read on the 2026-07-28 protocol: global and mcp facts only
        async with Client(server(workdir), mode=mode) as client:
            for text in await read_all(client):
                assert "Answers tersely." in text and "Over MCP, cites file paths." in text
                assert "pnpm" not in text and "hugo" not in text and "In Cursor" not in text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_persona_list_shows_the_roots_project_and_no_other(workdir, mode):  # noqa: F811
    shop = repository(workdir / "shop", "git@github.com:acme/shop.git")
    blog = repository(workdir / "blog", "https://github.com/acme/blog")
    seed_scopes(workdir, shop, blog)

    async def listed(client: Client) -> set[str]:
        answer = await client.call_tool("persona_list", {})
        return {fact["content"] for fact in answer.structured_content["personas"]}

    async with Client(server(workdir), list_roots_callback=roots(shop), mode=mode) as client:
        assert await listed(client) == {"Answers tersely.", "Uses pnpm in the shop.", "Over MCP, cites file paths."}
    async with Client(server(workdir), mode=mode) as client:
        assert await listed(client) == {"Answers tersely.", "Over MCP, cites file paths."}


def answering(*uris: str):
    """A client whose roots/list answers these URIs as they are, past the SDK's own checks (as a client built on
    another SDK, or none, can)."""
    async def listed(context) -> types.ListRootsResult:
        return types.ListRootsResult.model_construct(roots=[types.Root.model_construct(uri=uri, name="root")
                                                            for uri in uris])

    return listed


MALFORMED_ROOTS = {
    "not a file URI": ("http://evil/",),
    "a NUL in the path": ("file:///tmp/a%00b",),
    "a path that is not UTF-8": ("file:///%ff%fe",),
    "a good root beside a bad one": ("__shop__", "http://evil/"),
}


@pytest.mark.filterwarnings("ignore::UserWarning")  # the client's serializer notices the URIs it was not given
@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("case", sorted(MALFORMED_ROOTS))
async def test_malformed_roots_mean_no_project_and_every_tool_still_answers(workdir, mode, case):  # noqa: F811
    shop = repository(workdir / "shop", "git@github.com:acme/shop.git")
    seed_scopes(workdir, shop, repository(workdir / "blog", "https://github.com/acme/blog"))
    uris = [shop.as_uri() if uri == "__shop__" else uri for uri in MALFORMED_ROOTS[case]]
    async with Client(server(workdir), list_roots_callback=answering(*uris), mode=mode) as client:
        for _ in range(2):  # and the session goes on
            listed = await client.call_tool("persona_list", {})
            assert not listed.is_error, listed.content
            assert {fact["content"] for fact in listed.structured_content["personas"]} == {
                "Answers tersely.", "Over MCP, cites file paths."}  # no project known: global and mcp
        plain = await client.call_tool("persona_add", {"content": "Cites line numbers.", "topic": "style"})
        assert not plain.is_error and plain.structured_content["fact"]["scope"] == "global"
        refused = await client.call_tool("persona_add", {"content": "Uses bun.", "topic": "tools",
                                                         "scope": "project"})
        assert refused.is_error
        assert "scope project needs the session's working directory" in json.loads(refused.content[0].text)["error"]
        review = await client.call_tool("persona_review", {})
        assert not review.is_error, review.content
        assert "Uses bun." not in json.dumps((await client.call_tool("persona_list", {})).structured_content)
