"""Crash-safe file replacement."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700
TEMP_PREFIX = ".persona-tmp-"


def atomic_write_text(path: Path, text: str, *, mode: int = PRIVATE_FILE) -> None:
    """Replace ``path`` with ``text`` so a reader sees the old or the new bytes, never a mix.

    The temp file lives in the same directory (``os.replace`` is atomic only
    within one filesystem), is fsynced before the rename, and the directory is
    fsynced after it so the rename itself survives a power cut.
    """
    path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
