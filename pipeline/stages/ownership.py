"""Whose file it is: a whole file persona-tier writes is replaced only when its bytes are a render of ours.

A user may have written the file the target points at (the existing tier's
documentation told its users to write ``~/.hermes/memory/persona.md``
themselves), or edited our render by hand since. Replacing it would lose what
they wrote, so a render leaves it untouched and says how to go on: import its
facts and take it over (``persona adopt PATH``), point the target elsewhere,
or overwrite it on purpose (``persona render --force``, which keeps a copy of
the old bytes beside it). An empty file holds nothing to lose.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from filelock import Timeout

from ..clock import Clock, utc_now
from ..errors import FileSystemError
from ..fs import records
from ..fs.lock import file_lock, lock_path
from ..fs.read import describe, read_regular_bytes
from ..fs.write import atomic_write_bytes
from ..store import PersonaStore
from ..store.runs import rendered_here

log = logging.getLogger(__name__)
MAX_OURS_BYTES = 64 * 1024 * 1024  # far past any render's budget: a bigger file was never one of ours
LOCK_WAIT_S = 30.0  # how long a render waits for another render of the same file (write's lock_timeout_s)


class NotOurs(FileSystemError):
    """A target's file holds bytes persona-tier did not write; it was left as it was."""


def foreign(store: PersonaStore, path: Path) -> bytes | None:
    """The file's bytes when persona-tier did not write them (no run put exactly these bytes there); None for
    a file that is ours, empty or missing."""
    try:
        if os.stat(path).st_size > MAX_OURS_BYTES:
            return b"(larger than any render)"
        data = read_regular_bytes(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise FileSystemError(f"cannot write persona file {path}: it {describe(error)}") from None
    digest = hashlib.sha256(data).hexdigest()
    if not data or rendered_here(store, path, digest) or _rendered_before(store, path, digest):
        return None
    return data


def _rendered_before(store: PersonaStore, path: Path, digest: str) -> bool:
    """Whether a render of this store wrote these bytes in a history its runs no longer hold (a backup restored)."""
    store_id = store.store_id()
    try:
        return store_id is not None and records.rendered(records.folder(), store_id, str(path), digest)
    except RuntimeError:  # no home to keep records in: only the runs say what is ours
        return False


def remember_render(store: PersonaStore, path: Path, digest: str) -> None:
    """Keep, beside the run, that this store's render wrote ``digest`` into ``path`` (see :func:`foreign`)."""
    store_id = store.store_id()
    if store_id is not None:
        try:
            records.note_render(records.folder(), store_id, str(path), digest)
        except (OSError, RuntimeError) as error:  # the run stands: a later restore would not know this file as ours
            log.debug("the render of %s was not remembered: %s", path, error)


def foreign_settled(store: PersonaStore, path: Path, timeout_s: float = LOCK_WAIT_S) -> bytes | None:
    """:func:`foreign`, asked again under the file's render lock when the bytes look foreign: a render of ours
    replaces the file a moment before it commits the run that records those bytes, so a look in between (another
    process's render, outside the lock) saw our own bytes as someone else's. Ours, the usual answer, takes no lock."""
    if foreign(store, path) is None:
        return None
    try:
        with file_lock(lock_path(path), timeout_s):
            return foreign(store, path)
    except Timeout:
        raise FileSystemError(f"persona file {path} is locked by another render (waited {timeout_s} s)") from None


def refusal(path: Path, target: str) -> NotOurs:
    return NotOurs(f"{path} holds text persona-tier did not write (it is not one of its renders), so it was left "
                   f"untouched: import its facts and take it over with `persona adopt {path}`, point target "
                   f"{target!r} elsewhere (targets.{target}.path), or overwrite it with `persona render --force`, "
                   "which keeps a copy of it beside it")


def keep_copy(path: Path, data: bytes, clock: Clock = utc_now) -> Path:
    """A private copy of ``data`` beside ``path`` (``NAME.before-persona-tier-STAMP``), before it is overwritten."""
    copy = path.with_name(f"{path.name}.before-persona-tier-{clock():%Y%m%dT%H%M%S}")
    atomic_write_bytes(copy, data)
    return copy
