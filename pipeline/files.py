"""Reading persona files defensively: regular files only, no symlink escapes, no blocking on FIFOs."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


def read_regular_text(path: Path) -> str:
    """The file's text, bad UTF-8 replaced by U+FFFD; see :func:`read_regular_bytes`."""
    return read_regular_bytes(path).decode("utf-8", errors="replace")


def read_regular_bytes(path: Path, *, confine_symlinks: bool = True) -> bytes:
    """The file's bytes, or OSError saying why it cannot be read.

    A symlink is followed only if it stays inside the file's own directory
    (unless ``confine_symlinks`` is off: config dotfiles are often links into
    a dotfiles repository). A FIFO, socket or device is refused without
    blocking.
    """
    return read_regular_prefix(path, None, confine_symlinks=confine_symlinks)[0]


def read_regular_prefix(path: Path, limit: int | None, *, confine_symlinks: bool = True) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of the file, and whether there was more; see :func:`read_regular_bytes`."""
    if confine_symlinks:
        _check_symlink(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"is not a regular file ({_kind(info.st_mode)})", str(path))
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                return b"".join(chunks)[:limit], True
    finally:
        os.close(fd)
    return b"".join(chunks), False


def real_path(path: Path) -> Path:
    """``path`` with every symlink resolved; a symlink loop is an OSError (ELOOP), as the OS would say."""
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11 reports a loop this way
        raise OSError(errno.ELOOP, "is a symlink loop", str(path)) from None


def regular_file_kind(path: Path) -> str | None:
    """None if ``path`` (a symlink followed) is a regular file or missing; else what it is, e.g. "a FIFO"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"unusable ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    return "a directory" if stat.S_ISDIR(mode) else _kind(mode)


def _check_symlink(path: Path) -> None:
    if not path.is_symlink():
        return
    target = real_path(path)
    if target.parent != real_path(path.parent):
        raise PermissionError(errno.EPERM, f"is a symlink to {target}, outside its own directory", str(path))


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def describe(error: OSError) -> str:
    """A short phrase for an OSError raised while reading a persona file."""
    if isinstance(error, FileNotFoundError):
        return "does not exist"
    if isinstance(error, IsADirectoryError):
        return "is a directory"
    if isinstance(error, PermissionError) and error.errno == errno.EACCES:
        return "is not readable (permission denied)"
    if error.strerror and not error.strerror.startswith(("is ", "was ")):
        return f"cannot be used ({error.strerror})"
    return error.strerror or str(error)
