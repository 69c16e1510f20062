"""Issue 19, classes 5 and 6: what the store-backed injection path takes from the database it does not control.

Class 6 (both backends): a block row another tool changed is capped to the budget, whatever its own
``tokens`` column says, and only ``injection.max_file_bytes`` of it is read.

Class 5 (the real PostgreSQL server): the block listener hears NOTIFYs from a role with no table
privileges, so it parses strictly, survives anything, holds state only for what this process injects,
notices a wedged connection, keeps a slow poll as the floor, and does not hear another schema's
deployment.
"""

from __future__ import annotations

import hashlib
import logging

import pytest

from pipeline.injector import PersonaInjector
from pipeline.sessions import SessionSnapshots
from pipeline.settings import load_settings
from pipeline.store import PersonaStore
from pipeline.ticking import tick
from pipeline.tokens import get_counter

BUDGET = 120


def store_settings(database, profile: str, **overrides):
    return load_settings(overrides={
        **database.settings(), "store.session": profile, "targets.markdown.output": "store",
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
TAMPERINGS = {
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
