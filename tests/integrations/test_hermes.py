"""The Hermes memory provider, driven the way `hermes chat` drives it: from Hermes' own threads, in its order.

The call order and threads come from running hermes-agent 0.19 (`make test-hermes` runs the real agent):
`initialize` on the long-lived process_loop thread; every turn on a new thread; `/compress` on the
process_loop thread and an automatic compaction on the turn's own thread, each as on_pre_compress ->
(only if it made progress) system_prompt_block -> on_session_end -> on_session_switch(reason="compression");
`/model` builds a new agent, so a new provider instance, for the same session; exit hooks on the main thread.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaPromptMixin, PersonaStore, load_settings, resolve_target
from pipeline.cli import app
from pipeline.integrations.hermes_provider import PersonaMemoryProvider

from ..conftest import REPO, local_settings, obeying_file_modes, write
from ..support.hermes_threads import LongLivedThread, on_new_thread

V1 = "## style\n\n- Answers tersely.\n"
V2 = "## style\n\n- Answers in full sentences.\n"
HEADER = "# L3 Persona (Active Behavioral Rules)\n"


def prompt_with(block: str) -> str:
    return "You are Hermes.\n\n" + (HEADER + block if block else "") + "\n\nTools: shell."


class Host:
    """What Hermes' CLI does with a memory provider, thread by thread."""

    def __init__(self, home: Path, *, agent_context: str = "primary", user_id: str | None = None,
                 session_id: str = "s1") -> None:
        self.home, self.agent_context, self.user_id = home, agent_context, user_id
        self.session_id = session_id
        self.loop = LongLivedThread()
        self.prompt: str | None = None
        self.turns = 0
        self.provider = self._new_agent()

    def _new_agent(self) -> PersonaMemoryProvider:
        provider = PersonaMemoryProvider()
        extra = {"user_id": self.user_id} if self.user_id else {}
        self.loop.run(lambda: provider.initialize(self.session_id, hermes_home=str(self.home), platform="cli",
                                                  agent_context=self.agent_context, **extra))
        return provider

    def _build(self) -> str:
        return "You are Hermes.\n\n" + self.provider.system_prompt_block() + "\n\nTools: shell."

    def _turn_body(self) -> str:
        self.turns += 1
        if self.prompt is None:  # built on the first turn, then cached
            self.prompt = self._build()
        self.provider.on_turn_start(self.turns, "hello")
        return self.prompt

    def turn(self) -> str:
        return on_new_thread(self._turn_body)

    def _compact(self, *, progress: bool, new_id: str | None) -> None:
        self.provider.on_pre_compress([{"role": "user", "content": "..."}])
        if not progress:  # "Compression made no progress": no rebuild, no boundary
            return
        self.prompt = self._build()
        self.provider.on_session_end([])
        old, self.session_id = self.session_id, new_id or self.session_id
        self.provider.on_session_switch(self.session_id, parent_session_id=old, reset=False, reason="compression")

    def compress(self, *, progress: bool = True, new_id: str | None = None) -> None:
        """/compress, on the long-lived thread."""
        self.loop.run(lambda: self._compact(progress=progress, new_id=new_id))

    def auto_compact(self, *, progress: bool = True) -> str:
        """A compaction Hermes starts by itself, inside a turn, on that turn's thread."""

        def body() -> str:
            self._turn_body()
            self._compact(progress=progress, new_id=None)
            return self.prompt or ""

        return on_new_thread(body)

    def switch_model(self) -> None:
        """/model: the next turn builds a new agent (a new provider instance) for the same session."""
        self.provider = self._new_agent()
        self.prompt = None

    def new_session(self, new_id: str) -> None:
        """/new: reset=True, from the memory manager's worker thread."""
        old, self.session_id = self.session_id, new_id
        on_new_thread(lambda: self.provider.on_session_switch(new_id, parent_session_id=old, reset=True,
                                                              reason="new_session"), name="mem-sync_0")
        self.prompt = None

    def exit(self) -> None:
        self.provider.on_session_end([])
        self.provider.shutdown()
        self.loop.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    hermes_home = tmp_path / "hermes"
    write(hermes_home / "memory" / "persona.md", V1)
    return hermes_home


@pytest.fixture
def host(home):
    made = Host(home)
    yield made
    made.exit()


def persona_file(home: Path) -> Path:
    return home / "memory" / "persona.md"


def snapshot_rows(home: Path) -> list[tuple]:
    with closing(sqlite3.connect(home / "mnemosyne" / "data" / "mnemosyne.db")) as conn:
        return conn.execute("SELECT * FROM persona_snapshots ORDER BY session_id").fetchall()


# -- the prompt across turns and compactions ---------------------------------------


def test_the_block_is_in_the_prompt_and_stable_across_turns_on_new_threads(host, home):
    assert host.turn() == prompt_with(V1)
    write(persona_file(home), V2)  # a mid-session edit
    assert [host.turn() for _ in range(4)] == [prompt_with(V1)] * 4


def test_a_manual_compress_brings_in_the_new_persona(host, home):
    host.turn()
    write(persona_file(home), V2)
    host.compress()
    assert host.turn() == prompt_with(V2)
    assert snapshot_rows(home)[0][3] == V2


def test_an_automatic_compaction_on_the_turn_thread_brings_in_the_new_persona(host, home):
    host.turn()
    write(persona_file(home), V2)
    assert host.auto_compact() == prompt_with(V2)
    assert host.turn() == prompt_with(V2)


def test_a_compaction_with_an_unchanged_file_keeps_the_prompt_and_the_row_byte_identical(host, home):
    first = host.turn()
    rows = snapshot_rows(home)
    host.compress()
    host.auto_compact()
    assert host.turn() == first
    assert snapshot_rows(home) == rows  # timestamps included


def test_a_compaction_without_progress_changes_nothing(host, home):
    first = host.turn()
    rows = snapshot_rows(home)
    write(persona_file(home), V2)
    host.compress(progress=False)
    host.auto_compact(progress=False)
    assert host.turn() == first
    assert snapshot_rows(home) == rows
    host.switch_model()  # a rebuild that is not a compaction, after the failed ones
    assert host.turn() == first


def test_model_switch_builds_a_new_provider_that_keeps_the_snapshot(host, home):
    first = host.turn()
    write(persona_file(home), V2)
    host.switch_model()
    assert host.turn() == first


def test_a_rotated_session_id_inherits_the_refreshed_persona(host, home):
    host.turn()
    write(persona_file(home), V2)
    host.compress(new_id="s2")
    assert host.turn() == prompt_with(V2)
    rows = {row[1]: row[3] for row in snapshot_rows(home)}
    assert rows == {"s1": V1, "s2": V2}


def test_a_new_conversation_gets_the_current_persona(host, home):
    host.turn()
    write(persona_file(home), V2)
    host.new_session("fresh")
    assert host.turn() == prompt_with(V2)


def test_no_hook_logs_a_thread_problem_and_shutdown_on_the_main_thread_is_clean(home, caplog):
    with caplog.at_level(logging.DEBUG):
        made = Host(home)
        made.turn()
        made.compress()
        made.auto_compact()
        made.switch_model()
        made.turn()
        made.exit()
    text = caplog.text
    assert "thread" not in text.lower() and "shutdown" not in text.lower() and "failed" not in text


def test_every_hook_works_from_any_thread(home):
    provider = PersonaMemoryProvider()
    calls = [
        lambda: provider.initialize("s1", hermes_home=str(home), platform="cli"),
        lambda: provider.system_prompt_block(),
        lambda: provider.on_turn_start(1, "hi"),
        lambda: provider.get_tool_schemas(),
        lambda: provider.handle_tool_call("persona_list", {}),
        lambda: provider.on_pre_compress([]),
        lambda: provider.system_prompt_block(),
        lambda: provider.on_session_end([]),
        lambda: provider.on_session_switch("s1", parent_session_id="s1", reset=False),
        lambda: provider.system_prompt_block(),
        lambda: provider.backup_paths(),
        lambda: provider.shutdown(),
    ]
    results = [on_new_thread(call, name=f"hook-{i}") for i, call in enumerate(calls)]
    assert results[1] == results[6] == results[9] == HEADER + V1
    assert json.loads(results[4])["status"] == "ok"


def test_hooks_racing_on_many_threads_never_raise_and_agree(home):
    provider = PersonaMemoryProvider()
    provider.initialize("s1", hermes_home=str(home), platform="cli")
    blocks, errors = [], []

    def hammer() -> None:
        try:
            for _ in range(20):
                blocks.append(provider.system_prompt_block())
                provider.handle_tool_call("persona_list", {})
        except Exception as error:  # pragma: no cover - the assertion below reports it
            errors.append(error)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    provider.shutdown()
    assert not errors and set(blocks) == {HEADER + V1}


# -- never lose the block ---------------------------------------------------------


def test_a_failing_database_keeps_serving_the_last_good_persona_with_one_warning(host, home, caplog):
    first = host.turn()
    write(persona_file(home), V2)
    with closing(sqlite3.connect(home / "mnemosyne" / "data" / "mnemosyne.db")) as conn:
        conn.execute("DROP TABLE persona_snapshots")  # every snapshot read and write now fails
    with caplog.at_level(logging.WARNING):
        host.compress()
        assert host.turn() == prompt_with(V2)  # the rebuilt prompt shows the new text, served from memory
        host.compress()
        host.compress()
        assert host.turn() == prompt_with(V2)
    assert first == prompt_with(V1)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "serving it from memory" in warnings[0].getMessage()


def test_a_new_provider_with_a_broken_database_injects_the_file_not_nothing(home, tmp_path, monkeypatch, caplog):
    (tmp_path / "bad.db").write_bytes(b"garbage" * 300)
    monkeypatch.setenv("MNEMOSYNE_PERSONA_STORE__PATH", str(tmp_path / "bad.db"))
    with caplog.at_level(logging.WARNING):
        made = Host(home)
        assert made.turn() == prompt_with(V1)
        assert "not a SQLite database" in json.loads(made.provider.handle_tool_call("persona_list", {}))["error"]
        made.compress()
        made.exit()
    assert "not a SQLite database" in caplog.text


def test_a_write_locked_database_does_not_stall_the_prompt(home):
    db = home / "mnemosyne" / "data" / "mnemosyne.db"
    warm_up = Host(home, session_id="warm-up")
    warm_up.turn()  # creates the database
    warm_up.exit()
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        made = Host(home)
        assert made.turn() == prompt_with(V1)  # served from the file, recorded later
        assert time.monotonic() - started < 3  # not the 5 s busy timeout
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    made.exit()


# -- first chat, one home, per-user profiles -----------------------------------------


def test_a_new_user_gets_their_facts_on_the_first_chat_with_no_render_step(tmp_path, monkeypatch):
    hermes_home = tmp_path / "fresh-home"
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    added = CliRunner().invoke(app, ["add", "Never force-push.", "--topic", "git"])
    assert added.exit_code == 0 and "rendered 1 target" in added.stdout, added.stderr
    assert (hermes_home / "memory" / "persona.md").exists()  # the add rendered it where the provider reads
    made = Host(hermes_home)
    assert "- Never force-push." in made.turn()
    made.exit()


def test_the_cli_and_the_provider_use_the_same_paths_under_hermes_home(tmp_path, monkeypatch):
    hermes_home = tmp_path / "hh"
    monkeypatch.setenv("HERMES_HOME", str(hermes_home))
    settings = load_settings()
    provider = PersonaMemoryProvider()
    provider.initialize("s1", hermes_home=str(hermes_home), platform="cli")
    assert provider.backup_paths() == [str(resolve_target(settings, "markdown").path)]
    assert settings.store.path == hermes_home / "mnemosyne" / "data" / "mnemosyne.db"
    provider.shutdown()


def test_each_gateway_user_gets_their_own_persona(tmp_path, database):
    hermes_home = tmp_path / "gateway"
    shared = (f"store:\n  url: {database.target}\ntargets:\n  markdown:\n    output: store\n"
              "injection:\n  source: store\n") if database.is_postgres else ""
    write(hermes_home / "mnemosyne" / "persona.yaml", "hermes:\n  profile: user_id\n" + shared)
    for user, fact in (("alice", "Alice likes haiku."), ("bob", "Bob wants bullet points.")):
        made = Host(hermes_home, user_id=user, session_id=f"{user}-chat")
        made.provider.handle_tool_call("persona_add", {"content": fact, "topic": "style"})
        made.exit()
    alice, bob = Host(hermes_home, user_id="alice", session_id="a2"), Host(hermes_home, user_id="bob",
                                                                           session_id="b2")
    assert "Alice likes haiku." in alice.turn() and "Bob" not in alice.turn()
    assert "Bob wants bullet points." in bob.turn() and "Alice" not in bob.turn()
    assert (hermes_home / "memory" / "persona-alice.md").exists() != database.is_postgres  # a file, or a block
    listed = json.loads(bob.provider.handle_tool_call("persona_list", {}))
    assert [p["content"] for p in listed["personas"]] == ["Bob wants bullet points."]
    for name in ("profile", "session"):  # the new name and its deprecated twin
        refused = json.loads(bob.provider.handle_tool_call("persona_list", {name: "alice"}))
        assert refused["status"] == "error"  # no user can name another user's profile
    alice.exit()
    bob.exit()


def test_the_fixed_profile_is_the_default_and_ignores_user_id(home):
    made = Host(home, user_id="carol")
    made.provider.handle_tool_call("persona_add", {"content": "Shared fact.", "topic": "t"})
    with PersonaStore(home / "mnemosyne" / "data" / "mnemosyne.db") as store:
        assert [f.content for f in store.list()] == ["Shared fact."]  # profile "default"
    made.exit()


# -- tools ----------------------------------------------------------------------------


def test_tool_schemas_are_openai_functions_under_both_names(host):
    schemas = {s["name"]: s for s in host.provider.get_tool_schemas()}
    assert {"persona_promote", "persona_list", "mnemosyne_persona_promote", "mnemosyne_persona_list",
            "mnemosyne_persona_demote", "mnemosyne_persona_reinforce", "persona_session_refresh"} <= set(schemas)
    for schema in schemas.values():
        assert set(schema) == {"name", "description", "parameters"} and schema["description"]
        assert "session" not in schema["parameters"].get("properties", {})  # bound by the host, not the model
    promote = schemas["mnemosyne_persona_promote"]["parameters"]
    assert promote["required"] == ["memory_id"]
    assert promote["properties"]["tier"]["enum"] == ["permanent", "long_term", "working"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("mnemosyne_persona_reinforce", {"persona_id": 42}, "no persona fact with id 42"),
        ("persona_promote", {"memory_id": "m1", "tier": "forever"}, "invalid arguments"),
        ("persona_list", {"bogus": 1}, "bogus: extra inputs are not permitted"),
        ("persona_nope", {}, "unknown tool 'persona_nope'"),
        ("persona_list", "{not json", "not valid JSON"),
        ("persona_list", [1, 2], "arguments must be a JSON object"),
        ("persona_demote", {"persona_id": 2**64}, "persona_id"),
        ("persona_list", "[" * 100_000, "not valid JSON"),
    ],
)
def test_handle_tool_call_never_raises(host, name, args, message):
    result = json.loads(host.provider.handle_tool_call(name, args))
    assert result["status"] == "error" and message in result["error"]


def test_a_subagent_reads_but_never_writes(home):
    made = Host(home, agent_context="subagent")
    assert made.turn() == prompt_with(V1)
    refused = json.loads(made.provider.handle_tool_call("persona_add", {"content": "x", "topic": "t"}))
    assert "only the primary agent" in refused["error"]
    assert "persona_add" not in [s["name"] for s in made.provider.get_tool_schemas()]
    made.compress()
    with PersonaStore(home / "mnemosyne" / "data" / "mnemosyne.db") as store:
        assert store.list() == []
        with store.read() as conn:
            assert conn.execute("SELECT COUNT(*) FROM persona_snapshots").fetchone()[0] == 0
    made.exit()


def test_the_existing_tiers_tool_contract_on_a_database_mnemosyne_filled(home, tmp_path, monkeypatch):
    beam = pytest.importorskip("mnemosyne.core.beam", reason="mnemosyne-memory is in the dev extra")
    db = tmp_path / "mnemo" / "mnemosyne.db"
    db.parent.mkdir()
    memory = beam.BeamMemory(session_id="default", db_path=db)
    memory_id = memory.remember("Always run the tests before pushing.", source="preference", importance=0.9)
    monkeypatch.setenv("MNEMOSYNE_PERSONA_STORE__PATH", str(db))
    made = Host(home)
    call = made.provider.handle_tool_call
    promoted = json.loads(call("mnemosyne_persona_promote", {"memory_id": memory_id, "tier": "permanent",
                                                             "reason": ""}))
    assert promoted["status"] == "ok" and promoted["tier"] == "permanent" and isinstance(promoted["persona_id"], int)
    listed = json.loads(call("mnemosyne_persona_list", {"tier": "permanent"}))
    assert listed["status"] == "ok" and listed["count"] == 1
    row = listed["personas"][0]
    assert row["id"] == promoted["persona_id"] and row["content"] == "Always run the tests before pushing."
    assert {"tier", "topic", "confidence", "reinforcement_count", "last_reinforced_at"} <= set(row)
    assert json.loads(call("mnemosyne_persona_reinforce", {"persona_id": row["id"]}))["status"] == "ok"
    demoted = json.loads(call("mnemosyne_persona_demote", {"persona_id": row["id"], "reason": "changed my mind"}))
    assert demoted["status"] == "ok" and demoted["demoted_to"] == "memoria_preferences"
    missing = json.loads(call("mnemosyne_persona_demote", {"persona_id": row["id"]}))
    assert missing == {"status": "error", "error": f"no persona fact with id {row['id']} in profile 'default'"}
    made.exit()


# -- the host must survive us -----------------------------------------------------------


def test_a_bad_environment_never_raises_from_initialize_or_get_tool_schemas(home, monkeypatch):
    monkeypatch.setenv("MNEMOSYNE_PERSONA_TOKEN_CAP", "lots")
    provider = PersonaMemoryProvider()
    assert provider.is_available() is False
    provider.initialize("s1", hermes_home=str(home), platform="cli")
    assert provider.get_tool_schemas() == []
    assert provider.system_prompt_block() == ""
    answer = json.loads(provider.handle_tool_call("persona_list", {}))
    assert answer["status"] == "error" and "could not load its settings" in answer["error"]
    provider.on_session_switch("s\udcff", parent_session_id="s1")
    provider.shutdown()


UNWRITABLE_HOME = """
import json, sys
from pipeline.integrations.hermes_provider import PersonaMemoryProvider
provider = PersonaMemoryProvider()
provider.initialize("s1", hermes_home=sys.argv[1], platform="cli")
block = provider.system_prompt_block()
answer = json.loads(provider.handle_tool_call("persona_add", {"content": "x", "topic": "t"}))
provider.shutdown()
print(json.dumps({"block": block, "answer": answer}))
"""


def test_an_unwritable_home_never_raises(tmp_path):
    import subprocess
    import sys

    locked = tmp_path / "locked"
    (locked / "memory").mkdir(parents=True)
    (locked / "memory" / "persona.md").write_text(V1)
    for path in (locked, locked / "memory"):
        path.chmod(0o555)  # root may write anywhere; the child, obeying file modes, may not
    (locked / "memory" / "persona.md").chmod(0o444)
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent", "PYTHONPATH": str(REPO)}
    done = subprocess.run([*obeying_file_modes(), sys.executable, "-c", UNWRITABLE_HOME, str(locked)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["block"] == HEADER + V1  # the file, unpinned: the store cannot be created
    assert result["answer"]["status"] == "error" and "database directory" in result["answer"]["error"]
    assert "Traceback" not in done.stderr


def test_surrogates_and_odd_ids_never_raise(host):
    host.turn()
    host.provider.on_session_switch("\udcff\x00", parent_session_id="s1", reset=False)
    host.provider.on_session_switch("", parent_session_id=None, reset=True)
    assert isinstance(host.provider.system_prompt_block(), str)


def test_optional_hooks_accept_anything(host):
    assert host.provider.prefetch("query", session_id="x") == ""
    for hook in ("queue_prefetch", "sync_turn", "on_session_end", "on_memory_write", "on_delegation", "save_config"):
        assert getattr(host.provider, hook)("a", 1, extra=True) is None


def test_the_provider_imports_without_hermes():
    import sys

    assert "agent" not in sys.modules or not hasattr(sys.modules["agent"], "memory_provider")
    assert PersonaMemoryProvider.__mro__[1] is object


# -- the mixin ------------------------------------------------------------------------------


def test_the_mixin_without_a_session_id_injects_the_live_file_and_says_why(tmp_path, caplog):
    persona = write(tmp_path / "persona.md", V1)

    class Agent(PersonaPromptMixin):
        persona_settings = local_settings(tmp_path, {
            "injection.file": str(persona),
            "injection.enabled": True, "injection.mode": "session", "injection.check_interval_ms": 0})

    with caplog.at_level(logging.WARNING):
        first, second = Agent(), Agent()
        assert first._with_persona_block("P") == "P\n\n" + HEADER + V1
        write(persona, V2)
        assert second._with_persona_block("P") == "P\n\n" + HEADER + V2  # no snapshot frozen for everyone
    assert "no session id" in caplog.text
    assert not (tmp_path / "m.db").exists() or not snapshot_count(tmp_path / "m.db")


def snapshot_count(db: Path) -> int:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT COUNT(*) FROM persona_snapshots").fetchone()[0]
