"""A lock file held across processes: ``flock`` on POSIX, the filelock library elsewhere.

filelock 4 spends 70-100 µs of Python on every acquire and release (fork
tracking, per-thread state); ``flock`` itself takes 4 µs. A render of a real
persona takes about a millisecond, and takes one or two of these locks, so on
POSIX the lock is taken here, with the same contract: exclusive between
processes, between threads and between two takes in one thread (each take
opens the file anew, as a new ``FileLock`` did), mode 0600, and
``filelock.Timeout`` when it stays busy.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from .. import caches
from .locations import hermes_home, state_dir
from .write import PRIVATE_FILE, ensure_private_dir

try:
    import fcntl
except ImportError:  # not POSIX: filelock knows the platform's lock
    fcntl = None  # type: ignore[assignment]

POLL_S = (0.001, 0.05)  # first and longest wait between tries


LOCK_NAME_CHARS = 100  # of the file's own name, before the hash: a lock's name stays under 255 bytes


def lock_path(path: Path) -> Path:
    """The lock file of ``path``, in our own state directory: never beside the user's file (a ``CLAUDE.md.lock``
    in their project), never the file itself (``os.replace`` swaps its inode). Named after the file and a hash
    of its real path, so every process, through any symlink, takes the same lock."""
    real = os.fsencode(os.path.realpath(path))
    directory = _locks_dir(hermes_home())
    ensure_private_dir(directory)
    return directory / f"{path.name[:LOCK_NAME_CHARS]}-{hashlib.sha256(real).hexdigest()[:32]}.lock"


@caches.memo("lock.locks_dir", owner="process", key="a Hermes home", bound=64)
def _locks_dir(home: Path) -> Path:
    """The lock files' directory under the Hermes home (a pure function of it, kept for the few homes a process
    sees; whether it exists is asked every time)."""
    return state_dir(home) / "locks"


@contextmanager
def file_lock(path: Path, timeout_s: float) -> Iterator[None]:
    """Hold the lock file ``path`` (created 0600 if missing); raise ``filelock.Timeout`` after ``timeout_s``."""
    if fcntl is None:
        from filelock import FileLock

        with FileLock(path, timeout=timeout_s, mode=PRIVATE_FILE):
            yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, PRIVATE_FILE)
    try:
        _acquire(fd, path, timeout_s)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def file_lock_or_busy(path: Path, timeout_s: float) -> Iterator[bool]:
    """Hold ``path`` and yield True, or yield False if it stayed busy for ``timeout_s``."""
    with ExitStack() as stack:
        try:
            stack.enter_context(file_lock(path, timeout_s))
        except _busy():
            yield False
            return
        yield True


def _acquire(fd: int, path: Path, timeout_s: float) -> None:
    deadline, wait = time.monotonic() + timeout_s, POLL_S[0]
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _busy()(str(path)) from None
            time.sleep(min(wait, left))
            wait = min(wait * 2, POLL_S[1])


def _busy() -> type[Exception]:
    """filelock's ``Timeout``, the contract's "busy": imported when a lock stays busy, not by every process that
    opens a store (the library takes milliseconds to import)."""
    from filelock import Timeout

    return Timeout
