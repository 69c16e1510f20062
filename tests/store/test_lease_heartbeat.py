"""One heartbeat thread per process keeps every tick lock it holds alive past the lease, and lets each go alone
(the release names its profile as a quoted literal: a quote in the name is a test of it)."""

from __future__ import annotations

import threading
import time

from pipeline import PersonaStore

from ..support.databases import Db

LEASE_MS = 1500


def held_elsewhere(pg: Db, profile: str) -> bool:
    """Whether another process's store finds the profile's tick lock taken."""
    with PersonaStore(pg.target, profile=profile) as other, other.profile_lock(0) as held:
        return not held


def test_two_profiles_held_in_one_process_both_outlive_the_lease_and_are_let_go_alone(pg):
    release = {"ana": threading.Event(), "ben's": threading.Event()}
    taken = {"ana": threading.Event(), "ben's": threading.Event()}
    failures: list[BaseException] = []

    def hold(profile: str) -> None:
        try:
            with PersonaStore(pg.target, profile=profile, lock_lease_ms=LEASE_MS) as store, \
                    store.profile_lock(0) as held:
                assert held
                taken[profile].set()
                release[profile].wait(30)
                store.count_by_tier()  # the session is still there: the server did not end it as idle
        except BaseException as error:  # reported by the test thread
            failures.append(error)

    threads = [threading.Thread(target=hold, args=(name,)) for name in release]
    for thread in threads:
        thread.start()
    assert all(event.wait(30) for event in taken.values())
    time.sleep(3 * LEASE_MS / 1000)  # silent for three leases but for the heartbeat
    assert held_elsewhere(pg, "ana") and held_elsewhere(pg, "ben's")
    release["ana"].set()
    threads[0].join(30)
    assert not held_elsewhere(pg, "ana") and held_elsewhere(pg, "ben's")
    time.sleep(2 * LEASE_MS / 1000)
    assert held_elsewhere(pg, "ben's")
    release["ben's"].set()
    threads[1].join(30)
    assert not failures, failures
    assert not held_elsewhere(pg, "ben's")
    with PersonaStore(pg.target, profile="ana") as store, store.read() as conn:  # a connection the holders used
        assert conn.execute("SHOW idle_session_timeout").fetchone()[0] == "0"  # the lease went with the lock
