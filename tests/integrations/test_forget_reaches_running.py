"""A forget made by another process reaches our long-running ones (#48, point 3).

The MCP server (a real `persona mcp` process, driven by the SDK client over stdio) and the Hermes plugin compare
the store's erasure stamp before they answer; when a forget anywhere moved it, every cache of theirs that may hold
a fact's text (``pipeline.caches``) is dropped, so the next answer, and every such cache after it, holds no trace of
the forgotten text. The Hermes 0.22 section's last good text, served when a call fails, is one of them. Two profiles
share each store: the other's facts stay.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from .test_mcp_resources import ALICE_FACT, ALICE_MD, BOB_FACT, BOB_MD, env, persona, read, rendered

pytestmark = pytest.mark.anyio
SECRET = "Lives at 12 Quiet Lane, flat 3."
DUMP_BOUND_S = 60  # generous: a shared machine; a server that never answers the signal fails here, not by hanging

# `persona mcp` as it runs, with one addition for the test: on SIGUSR1 it writes which of its declared text caches
# reach the needle (in any string they hold, or hold through what they hold), and every string any object of the
# process holds with it in (but the needle itself, given in hex so the environment does not hold it either).
SERVER = """
import json, os, runpy, signal, sys
from tests.integrations.text_traces import anywhere, caches_holding, text_caches

def dump(signum, frame):
    needle, path = bytes.fromhex(os.environ["PERSONA_NEEDLE_HEX"]).decode(), os.environ["PERSONA_DUMP"]
    found = {"text_caches": text_caches(), "holding": caches_holding(needle), "anywhere": anywhere(needle)}
    with open(path + ".tmp", "w") as out:
        json.dump(found, out)
    os.replace(path + ".tmp", path)

signal.signal(signal.SIGUSR1, dump)
with open(os.environ["PERSONA_PID"], "w") as out:
    out.write(str(os.getpid()))
sys.argv = ["persona", "mcp"]
runpy.run_module("pipeline", run_name="__main__", alter_sys=True)
"""


def watched_server(workdir: Path) -> StdioServerParameters:
    extra = {"PERSONA_NEEDLE_HEX": SECRET.encode().hex(), "PERSONA_DUMP": str(workdir / "dump.json"),
             "PERSONA_PID": str(workdir / "server.pid")}
    return StdioServerParameters(command=sys.executable, args=["-c", SERVER], env={**env(workdir), **extra},
                                 cwd=str(workdir))


async def caches_holding(workdir: Path) -> dict[str, Any]:
    """What the running server says of its declared text caches and its objects, asked with SIGUSR1."""
    dump = workdir / "dump.json"
    dump.unlink(missing_ok=True)
    os.kill(int((workdir / "server.pid").read_text()), signal.SIGUSR1)
    with anyio.fail_after(DUMP_BOUND_S):
        while not dump.exists():
            await anyio.sleep(0.05)
    return dict(json.loads(dump.read_text()))


def secret_of_alice(workdir: Path) -> int:
    from pipeline import PersonaStore

    with PersonaStore(workdir / "m.db", profile="alice") as store:
        return store.add(SECRET, topic="home", tier="permanent").fact.id


async def listed(client: Client, profile: str) -> str:
    answer = await client.call_tool("persona_list", {"profile": profile})
    assert not answer.is_error, answer.content
    return json.dumps(answer.structured_content)


async def test_a_forget_by_the_cli_leaves_no_trace_in_a_running_mcp_servers_answers_or_caches(tmp_path):
    workdir = rendered(tmp_path)
    fact = secret_of_alice(workdir)
    async with Client(watched_server(workdir)) as client:
        assert SECRET in await listed(client, "alice") and BOB_FACT in await listed(client, "bob")
        assert SECRET in await read(client, ALICE_MD) and BOB_FACT in await read(client, BOB_MD)
        before = await caches_holding(workdir)
        assert before["holding"] and before["anywhere"], before  # the checks below see a copy when there is one
        persona(workdir, "forget", str(fact), "--profile", "alice")  # another process
        alice = await listed(client, "alice")
        assert SECRET not in alice and ALICE_FACT in alice
        after = await caches_holding(workdir)
        assert after["holding"] == [] and set(before["holding"]) <= set(after["text_caches"])
        assert after["anywhere"] == []  # nor does any other object of the server
        shown = await read(client, ALICE_MD)
        assert SECRET not in shown and ALICE_FACT in shown
        assert BOB_FACT in await listed(client, "bob") and BOB_FACT in await read(client, BOB_MD)
        assert (await caches_holding(workdir))["holding"] == []


async def test_a_forget_in_another_process_reaches_a_server_that_only_reads(tmp_path):
    """The first thing the server is asked after the forget is a read (a resource), not a tool."""
    workdir = rendered(tmp_path)
    fact = secret_of_alice(workdir)
    async with Client(watched_server(workdir)) as client:
        assert SECRET in await read(client, ALICE_MD)
        persona(workdir, "forget", str(fact), "--profile", "alice")
        shown = await read(client, ALICE_MD)
        assert SECRET not in shown and ALICE_FACT in shown
        after = await caches_holding(workdir)
        assert after["holding"] == [] and after["anywhere"] == []
        assert BOB_FACT in await read(client, BOB_MD)

