"""The rendered persona as MCP resources and a prompt, with change notifications (issue 21, the MCP point).

`persona mcp` runs as a real process; the official SDK client speaks to it over stdio, in both protocol
eras: 2026-07-28 (`subscriptions/listen`, the client's default) and the handshake era (`resources/subscribe`,
what mcp 1.x clients such as Hermes' use). Two profiles share one store: alice owns the fixed file
target, and the markdown target has {profile} in its path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from ..conftest import REPO, write

pytestmark = pytest.mark.anyio
NOTIFY_BOUND_S = 60  # generous: a shared machine; a notification that never comes fails here, not by hanging
ALICE_FACT = "Alice keeps her keys under the blue flowerpot."
BOB_FACT = "Bob answers in haiku."
BOB_NEW = "Bob uses tabs, never spaces."
ALICE_MD, BOB_MD, ALICE_FIXED = ("persona://alice/markdown", "persona://bob/markdown", "persona://alice/fixed")


def env(workdir: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(workdir),
        "PYTHONPATH": str(REPO),
        "MNEMOSYNE_PERSONA_CONFIG": str(workdir / "persona.yaml"),
        "MNEMOSYNE_PERSONA_STORE__PATH": str(workdir / "m.db"),
        "MNEMOSYNE_PERSONA_STORE__PROFILE": "alice",
        "MNEMOSYNE_PERSONA_FILE": str(workdir / "persona-{profile}.md"),
        "MNEMOSYNE_PERSONA_ENABLED": "true",
    }


def persona(workdir: Path, *args: str) -> str:
    """The CLI in its own process, as a user (or cron) runs it beside the server."""
    done = subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True,
                          env=env(workdir), cwd=workdir, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rendered(workdir: Path) -> Path:
    """A store with alice's and bob's facts, each profile rendered once by the CLI in its own process."""
    from pipeline import PersonaStore

    write(workdir / "persona.yaml", "targets:\n  markdown: {}\n  fixed:\n"
                                    f"    path: {workdir / 'alice-only.txt'}\n    template: persona.txt.j2\n")
    for profile, fact in (("alice", ALICE_FACT), ("bob", BOB_FACT)):
        with PersonaStore(workdir / "m.db", profile=profile) as store:
            store.add(fact, topic="habits", tier="permanent")
    persona(workdir, "render", "-p", "alice")
    persona(workdir, "render", "-p", "bob", "--target", "markdown")
    return workdir


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One rendered store for the tests that only read it (two CLI renders cost about a second)."""
    return rendered(tmp_path_factory.mktemp("mcp-resources"))


@pytest.fixture
def own_workdir(tmp_path: Path) -> Path:
    """A rendered store of the test's own, for a test that changes it."""
    return rendered(tmp_path)


def server(workdir: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp"], env=env(workdir),
                                 cwd=str(workdir))


async def read(client: Client, uri: str) -> str:
    contents = (await client.read_resource(uri)).contents
    assert len(contents) == 1 and contents[0].mime_type == "text/markdown"
    return contents[0].text


async def test_the_profiles_targets_are_listed_and_the_template_reaches_every_allowed_profile(workdir):
    async with Client(server(workdir)) as client:
        assert client.server_capabilities.resources.subscribe
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        assert set(listed) == {ALICE_MD, ALICE_FIXED}  # the configured profile's targets
        assert all(r.mime_type == "text/markdown" and r.description for r in listed.values())
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["persona://{profile}/{target}"]


async def test_a_resource_is_exactly_what_the_injector_appends_for_its_profile(workdir):
    alice, bob = persona(workdir, "inject", "-p", "alice"), persona(workdir, "inject", "-p", "bob")
    assert ALICE_FACT in alice and BOB_FACT in bob
    async with Client(server(workdir)) as client:
        assert await read(client, ALICE_MD) == alice
        assert await read(client, BOB_MD) == bob
        assert ALICE_FACT not in bob
        fixed = await read(client, ALICE_FIXED)
        assert ALICE_FACT in fixed and fixed.startswith("# L3 Persona")  # from the header on, as inject shows it


async def test_with_injection_disabled_a_read_says_so_and_how_to_enable_it_and_the_tools_still_work(workdir):
    disabled = server(workdir)
    disabled.env = {**disabled.env, "MNEMOSYNE_PERSONA_ENABLED": "false"}
    async with Client(disabled) as client:
        listed = {r.uri: r.description for r in (await client.list_resources()).resources}
        assert listed[ALICE_MD].startswith("The persona of profile 'alice' from target 'markdown', exactly as")
        assert "Not served now: injection is disabled (injection.enabled = false)" in listed[ALICE_MD]
        for reader in (client.read_resource(ALICE_MD), client.get_prompt("persona", {"profile": "bob"})):
            with pytest.raises(MCPError, match=r"is not served: injection is disabled .*MNEMOSYNE_PERSONA_ENABLED=1"):
                await reader
        with pytest.raises(MCPError, match="belongs to profile 'alice'"):  # refused for what it is, first
            await client.read_resource("persona://bob/fixed")
        listing = await client.call_tool("persona_list", {})
        assert not listing.is_error and ALICE_FACT in str(listing.structured_content)


async def test_another_profiles_file_is_a_clear_error_never_its_text(workdir):
    async with Client(server(workdir)) as client:
        for uri in ("persona://bob/fixed", "persona://bob/nosuch", "persona://bob", "file:///etc/passwd"):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            assert ALICE_FACT not in str(refused.value)
        with pytest.raises(MCPError, match="belongs to profile 'alice'"):
            await client.read_resource("persona://bob/fixed")
        with pytest.raises(MCPError, match="unknown target 'nosuch'"):
            await client.read_resource("persona://bob/nosuch")
        with pytest.raises(MCPError, match="belongs to profile 'alice'"):
            await client.get_prompt("persona", {"profile": "bob", "target": "fixed"})
        with pytest.raises(MCPError, match="belongs to profile 'alice'"):
            async with client.listen(resource_subscriptions=["persona://bob/fixed"]):
                pass
        assert BOB_FACT in await read(client, BOB_MD)  # the server goes on


async def test_the_prompt_carries_the_same_text_in_one_message(workdir):
    async with Client(server(workdir)) as client:
        [prompt] = (await client.list_prompts()).prompts
        assert prompt.name == "persona" and prompt.description
        assert {a.name: a.required for a in prompt.arguments} == {"profile": False, "target": False}
        mine = await client.get_prompt("persona")  # store.profile and injection.target
        [message] = mine.messages
        assert message.role == "user" and message.content.text == await read(client, ALICE_MD)
        [bobs] = (await client.get_prompt("persona", {"profile": "bob"})).messages
        assert bobs.content.text == await read(client, BOB_MD)
        assert BOB_FACT in bobs.content.text and ALICE_FACT not in bobs.content.text


def add_and_render(workdir: Path, profile: str, fact: str) -> None:
    persona(workdir, "add", fact, "--topic", "code", "-p", profile)
    persona(workdir, "render", "-p", profile, "--target", "markdown")


@pytest.mark.slow
async def test_a_listener_hears_of_a_render_in_another_process(own_workdir):
    async with Client(server(own_workdir)) as client:
        async with client.listen(resource_subscriptions=[BOB_MD, ALICE_MD]) as events:
            await anyio.to_thread.run_sync(add_and_render, own_workdir, "bob", BOB_NEW)
            with anyio.fail_after(NOTIFY_BOUND_S):
                event = await events.__aiter__().__anext__()
            assert event.uri == BOB_MD  # alice's text did not change, so only bob's URI is named
        text = await read(client, BOB_MD)
        assert BOB_NEW in text and ALICE_FACT not in text
        assert BOB_NEW not in await read(client, ALICE_MD)


@pytest.mark.slow
async def test_a_handshake_era_subscriber_gets_resources_updated(own_workdir):
    updated: list[str] = []
    heard = anyio.Event()

    async def on_message(message):
        if getattr(message, "method", None) == "notifications/resources/updated":
            updated.append(str(message.params.uri))
            heard.set()

    async with Client(server(own_workdir), mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources.subscribe
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource(BOB_MD)
        with pytest.raises(MCPError, match="belongs to profile 'alice'"), pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("persona://bob/fixed")
        await anyio.to_thread.run_sync(add_and_render, own_workdir, "bob", BOB_NEW)
        with anyio.fail_after(NOTIFY_BOUND_S):
            await heard.wait()
        assert updated == [BOB_MD]
        assert BOB_NEW in await read(client, BOB_MD)


# -- render before read, as every host's prompt path does (issue 27) ------------------------------------

ALICE_NEW = "Alice drinks her coffee black."


async def test_a_fact_added_through_the_servers_own_tool_is_in_the_next_read_and_prompt(own_workdir):
    async with Client(server(own_workdir)) as client:
        assert ALICE_NEW not in await read(client, ALICE_MD)
        added = await client.call_tool("persona_add", {"content": ALICE_NEW, "topic": "drinks"})
        assert not added.is_error, added
        assert ALICE_NEW in await read(client, ALICE_MD)  # no render was asked for: the read rendered first
        [message] = (await client.get_prompt("persona")).messages
        assert ALICE_NEW in message.content.text and BOB_FACT not in message.content.text
        assert ALICE_NEW not in await read(client, BOB_MD)


async def test_a_fact_another_process_wrote_is_read_by_a_running_and_a_new_server(own_workdir):
    async with Client(server(own_workdir)) as running:
        assert BOB_NEW not in await read(running, BOB_MD)
        await anyio.to_thread.run_sync(persona, own_workdir, "add", BOB_NEW, "--topic", "code", "-p", "bob")
        assert BOB_NEW in await read(running, BOB_MD)  # the CLI only wrote the store; nothing rendered it
    persona(own_workdir, "add", ALICE_NEW, "--topic", "drinks", "-p", "alice")
    async with Client(server(own_workdir)) as fresh:
        [message] = (await fresh.get_prompt("persona")).messages
        assert ALICE_NEW in message.content.text and BOB_NEW not in message.content.text


async def test_the_server_learns_what_a_hosts_model_saved_before_it_serves(own_workdir):
    """A read renders what is due, and learns first (learn.on_tick): Hermes' new USER.md entry is in the next
    read of alice's persona (the configured profile, the home's owner) with no cron; bob's read never learns this
    home's memory into bob's profile."""
    saved = "Alice drinks her coffee black."
    async with Client(server(own_workdir)) as client:
        assert saved not in await read(client, ALICE_MD)
    write(own_workdir / ".hermes" / "memories" / "USER.md", saved)
    async with Client(server(own_workdir)) as client:
        alice = await read(client, ALICE_MD)
        assert saved in alice and ALICE_FACT in alice and BOB_FACT not in alice
        bob = await read(client, BOB_MD)
        assert BOB_FACT in bob and ALICE_FACT not in bob and saved not in bob


GEMINI_SAVED = "Alice writes her commit messages in the imperative."


@pytest.mark.slow
async def test_a_running_server_learns_when_a_hosts_memory_file_changes_not_only_the_store(own_workdir):
    """The hosts' memory files are inputs of a read: with the store untouched since the last read, a running
    server's next read of alice's persona (the home's owner) learns what Hermes' memory tool saved and then what
    Gemini CLI's model added to its global memory, and a listener hears of the change; bob's reads never learn this
    home's memory into bob's profile."""
    gemini = own_workdir / ".gemini" / "GEMINI.md"
    write(gemini, "# My notes\n\n- I live in Lisbon.\n")  # there before: the user's own lines, never learned
    async with Client(server(own_workdir)) as client:
        assert ALICE_NEW not in await read(client, ALICE_MD) and BOB_FACT in await read(client, BOB_MD)
        async with client.listen(resource_subscriptions=[ALICE_MD, BOB_MD]) as events:
            write(own_workdir / ".hermes" / "memories" / "USER.md", ALICE_NEW)  # no CLI ran: only the file changed
            with anyio.fail_after(NOTIFY_BOUND_S):
                event = await events.__aiter__().__anext__()
            assert event.uri == ALICE_MD
        alice = await read(client, ALICE_MD)
        assert ALICE_NEW in alice and ALICE_FACT in alice and "Lisbon" not in alice
        write(gemini, gemini.read_text() + f"- {GEMINI_SAVED}\n")
        alice = await read(client, ALICE_MD)
        assert alice.count(GEMINI_SAVED) == 1 and alice.count(ALICE_NEW) == 1
        bob = await read(client, BOB_MD)
        assert BOB_FACT in bob and all(fact not in bob for fact in (ALICE_NEW, GEMINI_SAVED, ALICE_FACT))
    listed = persona(own_workdir, "list", "-p", "bob")
    assert ALICE_NEW not in listed and GEMINI_SAVED not in listed
    mine = persona(own_workdir, "list", "-p", "alice")
    assert ALICE_NEW in mine and GEMINI_SAVED in mine and "Lisbon" not in mine
