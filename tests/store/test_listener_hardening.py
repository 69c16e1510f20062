"""Issue 19, classes 5 and 6: what the store-backed injection path takes from the database it does not control.

Class 6 (both backends): a block row another tool changed is capped to the budget, whatever its own
``tokens`` column says, and only ``injection.max_file_bytes`` of it is read.

Class 5 (the real PostgreSQL server): the block listener hears NOTIFYs from a role with no table
privileges, so it parses strictly, survives anything, holds state only for what this process injects,
notices a wedged connection, keeps a slow poll as the floor, and does not hear another schema's
deployment.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import logging
import select
import socket
import threading
import time
import uuid

import psycopg
import pytest

from pipeline import PersonaInjector, PersonaStore, SessionSnapshots, StoreError, get_counter, load_settings, tick
from pipeline.store.blocks import parse_announcement
from pipeline.store.postgres.listen import listener_for, stop_listener

from ..support.databases import open_database, server_url

BUDGET = 120


def store_settings(database, profile: str, **overrides):
    return load_settings(overrides={
        **database.settings(), "store.profile": profile, "targets.markdown.output": "store",
        "injection.source": "store", "injection.enabled": True, "cap.token_cap": BUDGET, **overrides})


def rendered(database, profile: str, rule: str, **overrides):
    """``profile`` with one fact, rendered into its stored block."""
    settings = store_settings(database, profile, **overrides)
    with PersonaStore.from_settings(settings) as store:
        store.add(rule, topic="style")
        tick(settings, store=store, force=True)
    return settings


def sections(marker: str, count: int) -> str:
    """A persona-looking text of ``count`` sections, far over any small budget."""
    return "".join(f"## Topic {i}\n\n- {marker} rule number {i} with some words to count\n\n" for i in range(count))


def tokens(text: str) -> int:
    return get_counter("o200k_base").count(text)


def block_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "stored block" in r.getMessage()]


# (text, sha256 column, tokens column): each as another tool could leave a row.
HUGE = sections("TAMPERED", 60_000)  # ~4 MB, over injection.max_file_bytes below
MEDIUM = sections("TAMPERED", 400)  # under the byte bound, far over the token budget
SMALL = sections("TAMPERED", 30)  # a few times the budget: a count under the budget is plausible for it
TAMPERINGS = {
    "small text, stale hash, a plausible count under the budget": (SMALL, None, BUDGET - 20),
    "huge text, stale hash, tiny count": (HUGE, None, 12),
    "medium text, stale hash, tiny count": (MEDIUM, None, 12),
    "medium text, its own hash, tiny count": (MEDIUM, hashlib.sha256(MEDIUM.encode()).hexdigest(), 12),
    "medium text, stale hash, zero count": (MEDIUM, None, 0),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
def test_a_tampered_block_row_is_capped_in_injection_and_snapshots(database, caplog, tampering):
    alice = rendered(database, "alice", "Answers tersely", **{"injection.max_file_bytes": 200_000})
    bob = rendered(database, "bob", "Bob prefers long answers", **{"injection.max_file_bytes": 200_000})
    bob_before = database.execute("SELECT text, sha256, tokens FROM persona_blocks WHERE profile = 'bob'")
    text, sha, count = TAMPERINGS[tampering]
    if sha is None:
        database.execute("UPDATE persona_blocks SET text = ?, tokens = ? WHERE profile = 'alice'", (text, count))
    else:
        database.execute("UPDATE persona_blocks SET text = ?, tokens = ?, sha256 = ? WHERE profile = 'alice'",
                         (text, count, sha))
    caplog.set_level(logging.WARNING)
    # No trigger may fire, so the hosts serve the row as it is and the readers' own trust rules are what is
    # tested (with triggers on, the render before a refresh would put the real persona back).
    quiet = {name: False for name in ("explicit", "cold_start", "recovery", "on_interval", "daily_sync",
                                      "store_changed", "config_changed")}
    alice = alice.model_copy(update={"triggers": alice.triggers.model_copy(update=quiet)})

    live = PersonaInjector(alice).block()
    snapshot = SessionSnapshots(alice).snapshot("s1")
    session = PersonaInjector(alice.model_copy(update={"injection": alice.injection.model_copy(
        update={"mode": "session"})}), session_id="s2").block()

    for block in (live, snapshot.text, session):
        assert "TAMPERED rule number 0" in block  # the row's own text, capped, not dropped
        assert tokens(block) <= BUDGET
    recorded = database.execute("SELECT text FROM persona_snapshots WHERE profile = 'alice' AND session_id = 's1'")
    assert recorded[0][0] == snapshot.text  # what is pinned is the capped text
    warned = block_warnings(caplog)
    assert len(set(warned)) == 1 and "'alice'" in warned[0], warned  # one warning per reader, naming the profile
    assert all("TAMPERED" not in message for message in warned)  # never the text itself
    if text is HUGE:
        assert "larger than 200000 bytes (injection.max_file_bytes)" in warned[0]
    # The other profile: its row, its injection and its snapshot are its own.
    assert database.execute("SELECT text, sha256, tokens FROM persona_blocks WHERE profile = 'bob'") == bob_before
    bob_block = PersonaInjector(bob).block()
    assert "Bob prefers long answers" in bob_block and "TAMPERED" not in bob_block
    assert "TAMPERED" not in SessionSnapshots(bob).snapshot("s1").text


def test_an_untouched_block_keeps_its_recorded_count_and_is_injected_whole(database, caplog):
    alice = rendered(database, "alice", "Answers tersely")
    stored = database.execute("SELECT text FROM persona_blocks WHERE profile = 'alice'")[0][0]
    caplog.set_level(logging.WARNING)
    assert PersonaInjector(alice).block().strip() in stored
    assert "Answers tersely" in SessionSnapshots(alice).snapshot("s1").text
    assert block_warnings(caplog) == []


# -- class 5: the block listener, on the real server -------------------------------------------------------------


def deployment(path):
    for db in open_database("postgresql", path):
        yield db
        stop_listener(str(db.target))


@pytest.fixture
def pg(tmp_path):
    """A deployment: its schema, and its listener stopped at the end."""
    yield from deployment(tmp_path)


@pytest.fixture
def pg_other(tmp_path):
    """A second deployment in the same database: a schema of its own."""
    yield from deployment(tmp_path / "other")


@pytest.fixture
def hostile(pg):
    """A role that can connect and nothing else: no privilege on any table of ours."""
    role = f"h19_hostile_{uuid.uuid4().hex[:10]}"
    pg.execute(f"CREATE ROLE {role} LOGIN")
    url = server_url().replace("//postgres@", f"//{role}@", 1)
    assert role in url
    try:
        with psycopg.connect(url, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(f"SELECT text FROM {pg.schema}.persona_blocks")
        yield url
    finally:
        pg.execute(f"DROP ROLE {role}")


def channel_of(schema: str) -> str:
    """The deployment's channel, derived as documented: persona_blocks_ and 16 hex digits of md5(schema)."""
    return "persona_blocks_" + hashlib.md5(schema.encode()).hexdigest()[:16]


def notify(url: str, channel: str, payloads: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for payload in payloads:
            conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))


def pg_settings(url: str, profile: str, **overrides):
    return load_settings(overrides={
        "store.url": url, "store.profile": profile, "targets.markdown.output": "store",
        "injection.source": "store", "injection.enabled": True, "injection.check_interval_ms": 100, **overrides})


def add_rule(settings, rule: str) -> None:
    """A new fact and its render, as a tick on another host would write it."""
    with PersonaStore.from_settings(settings) as store:
        store.add(rule, topic="style")
        tick(settings, store=store, force=True)


def seen_within(injector: PersonaInjector, text: str, seconds: float) -> float | None:
    """Seconds until ``text`` is in the injected block, or None if it was not within ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if text in injector.block():
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def listening(settings, injector: PersonaInjector):
    """The process's listener for these settings, connected, with the injector's first answer taken."""
    injector.block()
    listener = listener_for(settings.store.url, settings.injection.listen_ping_ms)
    assert listener.wait_connected(10)
    injector.block()
    return listener


HOSTILE = [
    "²\tmarkdown\talice", "٣\tmarkdown\talice", "１\tmarkdown\talice",  # digits to str.isdigit(), not to us
    "1\tmarkdown", "1", "", "\t", "\t\t", "\t\t\t", "1\tmarkdown\talice\textra", "1\t\talice", "1\tmarkdown\t",
    "-1\tmarkdown\talice", "+1\tmarkdown\talice", " 1\tmarkdown\talice", "1 \tmarkdown\talice",
    "1" * 40 + "\tmarkdown\talice",  # past any BIGINT
    "1\t" + "m" * 101 + "\talice", "1\tmarkdown\t" + "a" * 1001,  # past the longest name
    "x" * 7990, "ping\tdeadbeefdeadbeef", "\u202e\U0001f600\ufeff garbage \x7f\x01",
]


@pytest.mark.slow
def test_hostile_notifies_from_a_role_without_privileges_leave_the_listener_alive_and_bounded(pg, hostile):
    url = str(pg.target)
    alice, bob = pg_settings(url, "alice"), pg_settings(url, "bob")
    add_rule(alice, "Answers tersely")
    add_rule(bob, "Bob likes detail")
    injectors = {name: PersonaInjector(settings) for name, settings in (("alice", alice), ("bob", bob))}
    listener = listening(alice, injectors["alice"])
    injectors["bob"].block()
    epoch = listener.epoch
    channel = channel_of(pg.schema)

    notify(hostile, channel, HOSTILE)
    # A flood of distinct, well-formed keys: one statement, delivered at its commit.
    with psycopg.connect(hostile, autocommit=True) as conn:
        conn.execute("SELECT pg_notify(%s, g || E'\\tmarkdown\\tuser' || g) FROM generate_series(1, 50000) g",
                     (channel,))
    # Forged announcements for a real block only make the injector check its hash: the text stays the row's.
    notify(hostile, channel, ["7\tmarkdown\talice", "8\tmarkdown\tbob"])
    add_rule(alice, "Never force-push")  # the real change, announced after all of it

    assert seen_within(injectors["alice"], "Never force-push", 30) is not None
    assert listener.epoch == epoch  # never reconnected: no payload broke the connection or the thread
    assert listener.heard("alice", "markdown") is not None  # healthy, so the change came by the listener
    assert listener.held == 2  # alice's and bob's blocks, not 50,000 strangers'
    bob_block = injectors["bob"].block()
    assert "Bob likes detail" in bob_block and "force-push" not in bob_block and "tersely" not in bob_block
    injectors["bob"].close()
    assert listener.held == 1
    for injector in injectors.values():
        injector.close()


@pytest.mark.slow
def test_a_source_dropped_without_close_stops_being_counted(pg):
    alice = pg_settings(str(pg.target), "alice")
    add_rule(alice, "Answers tersely")
    first = PersonaInjector(alice)
    listener = listening(alice, first)
    second = PersonaInjector(pg_settings(str(pg.target), "bob"))
    second.block()
    assert listener.held == 2
    del second
    gc.collect()
    assert listener.held == 1
    first.close()
    assert listener.held == 0


@pytest.mark.slow
def test_a_terminated_listener_reconnects_and_a_new_block_is_still_seen(pg):
    alice = pg_settings(str(pg.target), "alice", **{"injection.listen_ping_ms": 300})
    add_rule(alice, "Answers tersely")
    injector = PersonaInjector(alice)
    listener = listening(alice, injector)
    epoch, pid = listener.epoch, listener.backend_pid
    pg.execute("SELECT pg_terminate_backend(?)", (pid,))
    add_rule(alice, "Never force-push")
    assert seen_within(injector, "Never force-push", 10) is not None  # the floor is 60 s: this is not it
    assert listener.wait_connected(10) and listener.epoch > epoch and listener.backend_pid != pid
    add_rule(alice, "Signs off with a dash")
    assert seen_within(injector, "Signs off with a dash", 10) is not None
    injector.close()


@pytest.mark.slow
def test_a_wedged_listener_connection_is_noticed_and_replaced(pg, tmp_path):
    """A half-open LISTEN socket: the proxy stops forwarding it, and keeps it open, while everything else flows."""
    with Proxy() as proxy:
        url = str(pg.target).replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
        alice = pg_settings(url, "alice", **{"injection.listen_ping_ms": 300})
        writer = pg_settings(str(pg.target), "alice")
        add_rule(writer, "Answers tersely")
        injector = PersonaInjector(alice)
        listener = listening(alice, injector)
        pid = listener.backend_pid
        assert proxy.freeze_listeners() == 1
        add_rule(writer, "Never force-push")
        # Bound: 2 x listen_ping_ms to notice, then check_interval_ms polling; 10 s leaves room for a busy host.
        took = seen_within(injector, "Never force-push", 10)
        assert took is not None
        print(f"wedged listener: new block seen after {took:.2f} s (ping 0.3 s, check interval 0.1 s)")
        assert listener.wait_connected(10) and listener.backend_pid != pid  # listening on a new connection
        add_rule(writer, "Signs off with a dash")
        assert seen_within(injector, "Signs off with a dash", 10) is not None
        injector.close()
        stop_listener(url)


@pytest.mark.slow
def test_a_block_changed_without_an_announcement_is_seen_within_the_poll_floor(pg):
    alice = pg_settings(str(pg.target), "alice", **{"injection.poll_floor_ms": 1000})
    add_rule(alice, "Answers tersely")
    injector = PersonaInjector(alice)
    listener = listening(alice, injector)
    text = "## style\n\n- Rewritten by another tool\n"
    pg.execute("UPDATE persona_blocks SET text = ?, sha256 = ?, tokens = 9 WHERE profile = 'alice'",
               (text, hashlib.sha256(text.encode()).hexdigest()))  # no NOTIFY: only the floor can find it
    took = seen_within(injector, "Rewritten by another tool", 1.0 + 5)  # the floor, and room for a busy host
    assert took is not None
    assert listener.heard("alice", "markdown") is not None  # the listener was healthy throughout
    injector.close()


@pytest.mark.slow
def test_two_deployments_in_one_database_share_no_channel_and_no_lock(pg, pg_other, hostile):
    a, b = pg_settings(str(pg.target), "alice"), pg_settings(str(pg_other.target), "alice")
    add_rule(a, "A's alice answers tersely")
    add_rule(b, "B's alice likes detail")
    in_a, in_b = PersonaInjector(a), PersonaInjector(b)
    listening(a, in_a)
    listener_b = listening(b, in_b)
    before = listener_b.heard("alice", "markdown")
    notify(hostile, "persona_blocks", ["99\tmarkdown\talice"])  # the old, shared channel: nobody listens
    add_rule(a, "A's alice never force-pushes")
    assert seen_within(in_a, "never force-pushes", 30) is not None
    add_rule(b, "B's alice signs off")  # committed after A's: B's listener reads the queue in that order
    assert seen_within(in_b, "signs off", 30) is not None
    after = listener_b.heard("alice", "markdown")
    assert before is not None and after is not None
    assert after == (before[0], before[1] + 1)  # B heard its own announcement, and not A's
    assert "A's alice" not in in_b.block() and "B's alice" not in in_a.block()
    in_a.close()
    in_b.close()


@pytest.mark.slow
def test_two_deployments_in_one_database_share_no_lock(pg, pg_other):
    a, b, a_again = (PersonaStore(str(db.target), profile="alice", busy_timeout_ms=300) for db in (pg, pg_other, pg))
    for store in (a, b, a_again):
        store.open()
    with a.profile_lock(1) as held, b.profile_lock(0.5) as held_b, a_again.profile_lock(0.3) as held_again:
        assert held and held_b  # B's alice has a tick lock of its own
        assert not held_again  # A's alice is still one tick at a time
    with a.transaction():
        b.add("B writes while A holds its write lock", topic="t")
        with pytest.raises(StoreError, match="another writer held this profile"):
            a_again.add("A's second writer queues", topic="t")
    for store in (a, b, a_again):
        store.close()


def test_announcements_are_parsed_strictly():
    assert parse_announcement("12\tmarkdown\talice") == ("alice", "markdown", 12)
    assert parse_announcement("12\tmarkdown\t" + "a" * 1000) is not None
    for payload in HOSTILE:
        assert parse_announcement(payload) is None, payload


class Proxy:
    """A TCP proxy to the shared server that can freeze the connections that said LISTEN: open, silent."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.pairs: list[dict] = []
        self.closing = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closing.set()
        self.server.close()
        for pair in self.pairs:
            for sock in (pair["client"], pair["upstream"]):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def freeze_listeners(self) -> int:
        frozen = [pair for pair in self.pairs if pair["listens"]]
        for pair in frozen:
            pair["frozen"] = True
        return len(frozen)

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            pair = {"client": client, "upstream": socket.create_connection(("127.0.0.1", 5432)), "listens": False,
                    "frozen": False}
            self.pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair, "client", "upstream"), daemon=True).start()
            threading.Thread(target=self._pump, args=(pair, "upstream", "client"), daemon=True).start()

    def _pump(self, pair: dict, source: str, sink: str) -> None:
        while not self.closing.is_set():
            if pair["frozen"]:
                time.sleep(0.05)  # read nothing, send nothing: the kernel still acknowledges what arrives
                continue
            try:
                ready = select.select([pair[source]], [], [], 0.05)[0]
                data = pair[source].recv(65536) if ready else None
                if data == b"":
                    return
                if data:
                    pair["listens"] = pair["listens"] or (source == "client" and b"LISTEN" in data)
                    while pair["frozen"] and not self.closing.is_set():
                        time.sleep(0.05)  # what was read as it froze is held too
                    pair[sink].sendall(data)
            except OSError:
                return
