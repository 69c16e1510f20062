"""A forget's scrub of the hosts' histories, journaled so it always finishes (:mod:`pipeline.store.history_scrubs`).

The erasure records what the scrub will look for (keyed hashes, never the text) in its own transaction; the scrub
runs after it commits; its rows go once nothing is left that a later run could change. A forget killed, crashed or
out of disk in between leaves them, and the next ``persona scrub``, ``forget`` or ``status`` of the profile on this
machine finishes them, finding the texts by their hashes (:class:`~pipeline.fs.text_find.Finder`).
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from .. import inputs
from ..store import PersonaStore
from ..store.backend import Connection
from ..store.forgotten import secret
from ..store.history_scrubs import Pending, finish_scrubs, pending_scrubs, record_scrubs
from .host_histories import HostHistories, needles, scrub_histories


def place() -> str:
    """This machine and home: the histories a scrub here reaches (another machine's are its own to scrub)."""
    machine = ""
    with contextlib.suppress(OSError):
        machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()[:12]
    return f"{socket.gethostname()}{'/' + machine if machine else ''}:{os.path.realpath(inputs.home())}"


class Recorder:
    """The erasure's :data:`~pipeline.store.erasure.Journal`: it keeps the erased texts for the scrub that follows
    and records their pending scrub in the erasure's transaction (unless ``keep``: the histories stay as they are)."""

    def __init__(self, store: PersonaStore, *, keep: bool) -> None:
        self.store, self.texts = store, list[str]()
        self.place = None if keep else place()

    def __call__(self, conn: Connection, texts: list[str]) -> None:
        self.texts += texts
        if self.place is not None:
            record_scrubs(self.store, conn, self.place, needles(secret(self.store, conn), texts))


def pending(store: PersonaStore) -> list[Pending]:
    """The profile's scrubs still to finish on this machine."""
    return pending_scrubs(store, place())


def scrub_after(store: PersonaStore, texts: list[str], *, keep: bool = False) -> HostHistories:
    """Scrub ``texts`` (just erased) and every pending scrub of the profile here from the hosts' histories; the
    journal's rows go when nothing is left that a later run could change (``keep``: only find them)."""
    here = place()
    waiting = [] if keep else pending_scrubs(store, here)
    with store.read() as conn:
        key = secret(store, conn)
    known = needles(key, texts)
    digests = {found.digest for found in known}
    done = scrub_histories(known + [item.needle for item in waiting if item.needle.digest not in digests], key,
                           keep=keep)
    if not keep and done.finished and (waiting or known):
        finish_scrubs(store, here, {*digests, *(item.needle.digest for item in waiting)})
    return done
