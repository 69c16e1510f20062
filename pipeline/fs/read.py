"""Reading persona files defensively: regular files only, no symlink escapes, no blocking on FIFOs."""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


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
    found = read_file(path, limit, confine_symlinks=confine_symlinks)
    return found.data, found.truncated


@dataclass(frozen=True, slots=True)
class FileRead:
    """A file's bytes (at most a limit of them) and the state it was read in."""

    data: bytes
    truncated: bool
    key: tuple[int, int, int, int]  # (mtime_ns, size, inode, ctime_ns): changes whenever the content can have


def read_file(path: Path, limit: int | None, *, confine_symlinks: bool = True) -> FileRead:
    """Read a regular file in one open: see :func:`read_regular_bytes` for what is refused."""
    fd, info = _open_regular(path, confine_symlinks)
    try:
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                return FileRead(b"".join(chunks)[:limit], True, state_key(info))
    finally:
        os.close(fd)
    return FileRead(b"".join(chunks), False, state_key(info))


def _open_regular(path: Path, confine_symlinks: bool) -> tuple[int, os.stat_result]:
    flags = os.O_RDONLY | os.O_NONBLOCK
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW)  # the common case: one open, no lstat
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        if confine_symlinks:  # a symlink (or a loop): allowed only into the file's own directory
            _check_symlink(path)
        fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"is not a regular file ({_kind(info.st_mode)})", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def probe_regular(path: Path, *, confine_symlinks: bool = True) -> int:
    """The size of a readable regular file, without reading it; OSError says why it is not one."""
    fd, info = _open_regular(path, confine_symlinks)
    os.close(fd)
    return info.st_size


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s answer, or TimeoutError when it takes longer than ``seconds``: a read stuck on a slow or dead
    mount (which no O_NONBLOCK spares) is left to finish on a thread of its own, never waited for. An error
    ``call`` raises is raised here."""
    answers: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            answers.append(call())
        except BaseException as error:  # handed to the caller, whatever it is
            errors.append(error)

    worker = threading.Thread(target=run, name="persona-bounded-read", daemon=True)
    worker.start()
    worker.join(seconds)
    if errors:
        raise errors[0]
    if not answers:
        raise TimeoutError(errno.ETIMEDOUT, f"no answer in {seconds:g} s")
    return answers[0]


def state_key(info: os.stat_result) -> tuple[int, int, int, int]:
    """What changes whenever a file's content can have: (mtime_ns, size, inode, ctime_ns)."""
    return info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns


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
    return mode_kind(mode)


def mode_kind(mode: int) -> str | None:
    """None for a regular file's mode; else what the file is, e.g. "a directory", "a FIFO"."""
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
