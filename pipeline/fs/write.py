"""Crash-safe, private file replacement."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from .. import caches
from ..errors import InputError
from .read import mode_kind, real_path

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def temp_prefix(path: Path) -> str:
    """Temp files are named after their target, so cleaning up one target never touches another's."""
    return f".{path.name}.tmp-"


def ensure_private_dir(directory: Path) -> None:
    """Create missing directories (parents included) with mode 0700; leave existing ones alone."""
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR)


def atomic_write_text(path: Path, text: str, *, mode: int = PRIVATE_FILE) -> None:
    """Replace ``path`` with ``text`` (UTF-8); see :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = PRIVATE_FILE,
                       swap: Callable[[Path, Path], bool] | None = None) -> bool:
    """Replace ``path`` with ``data`` so a reader sees the old or the new bytes, never a mix; whether it did.

    The temp file lives in the same directory (``os.replace`` is atomic only
    within one filesystem), is fsynced before the rename, and the directory is
    fsynced after it so the rename itself survives a power cut. ``swap(temp,
    path)`` puts the synced temp file in the path's place instead of a plain
    rename (the region writer's checked swap); when it says no, the path is
    left as it was. Whatever the temp name holds afterwards is removed.
    """
    try:
        fd, temp_name = _new_temp(path)
    except FileNotFoundError:  # its directory is missing: made first, then the temp file in it
        ensure_private_dir(path.parent)
        fd, temp_name = _new_temp(path)
    placed = False
    try:
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        placed = (swap or _rename)(Path(temp_name), path)
    finally:
        if swap is not None or not placed:  # a plain rename left nothing under the temp name
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)  # our bytes, unused; or, after an exchange, the file they displaced
    if placed:
        fsync_dir(path.parent)
    return placed


_TEMP_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_BINARY", 0))


def _new_temp(path: Path) -> tuple[int, str]:
    """A new private temp file beside ``path``, as ``tempfile.mkstemp`` makes one (created exclusively, 0600, not
    through a symlink, not inherited), without its per-call Python: a random name, another on a clash."""
    for _ in range(100):
        name = os.path.abspath(os.path.join(path.parent, temp_prefix(path) + os.urandom(6).hex()))
        try:
            return os.open(name, _TEMP_FLAGS, PRIVATE_FILE), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(path.parent))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _rename(temp: Path, path: Path) -> bool:
    os.replace(temp, path)
    return True


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


@caches.memo("write.renameat2", owner="process", key="none: the C library's renameat2, looked up once", bound=1)
def _renameat2() -> Any:
    """Linux's renameat2 from the C library (None elsewhere), looked up at the first exchange."""
    import ctypes

    return getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None) if sys.platform == "linux" else None


def exchange(a: Path, b: Path) -> bool:
    """Swap two files' names in one atomic step (Linux's renameat2 RENAME_EXCHANGE); False where the platform or
    filesystem cannot, FileNotFoundError when either is gone."""
    import ctypes

    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(b))


def remove_stale_temps(path: Path) -> int:
    """Delete temp files a killed writer left behind. Call only while holding the target's lock."""
    prefix = temp_prefix(path)
    try:
        with os.scandir(path.parent) as entries:
            leftovers = [entry.path for entry in entries if entry.name.startswith(prefix)]
    except FileNotFoundError:
        return 0
    removed = 0
    for leftover in leftovers:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(leftover)
            removed += 1
    return removed


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def same_file(a: Path, b: Path) -> bool:
    """Whether two spellings name one file: the same path once resolved, or the same inode (a hard link)."""
    return _same(FileIdentity(a), b)


def refuse_protected(path: Path, protected: Mapping[Path, str], *, what: str,
                     mine: FileIdentity | None = None) -> None:
    """Raise InputError if ``path`` (whose :class:`FileIdentity` ``mine`` is, when the caller has it) is one of
    ``protected`` (path -> what it is), however it is spelled."""
    mine = mine or FileIdentity(path)
    for other, role in protected.items():
        if _same(mine, other):
            raise InputError(f"refusing to write {what} to {path}: that is {role}")


class FileIdentity:
    """A path as the file system has it now: its inode (if it exists), what kind of file it is, and only when
    asked its resolved spelling. One lstat (a stat more through a symlink); symlinks are resolved only where two
    missing files might be one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.info, self.error, self.unnamed = _look(path)
        self.inode = None if self.info is None else (self.info.st_dev, self.info.st_ino)
        self._real: Path | None = None

    def real(self) -> Path:
        if self._real is None:
            self._real = real_path(self.path)
        return self._real

    def kind(self) -> str | None:
        """:func:`~.read.regular_file_kind` of the path, as looked at."""
        if isinstance(self.error, ValueError):
            raise self.error
        if self.info is None:
            return None if self.error is None or isinstance(self.error, FileNotFoundError) else \
                f"unusable ({cast(OSError, self.error).strerror})"
        return mode_kind(self.info.st_mode)


def _look(path: Path) -> tuple[os.stat_result | None, Exception | None, bool]:
    """(the stat with symlinks followed, or None and why, and whether nothing at all has the path's name: no
    file, not even a dangling symlink, and no ``..`` in it; such a path resolves to its directory's real path
    and its own name)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError as error:
        return None, error, ".." not in path.parts and bool(path.name)
    except (OSError, ValueError):
        return (*_followed(path), False)
    if not stat.S_ISLNK(info.st_mode):
        return info, None, False  # not a symlink: the lstat is the stat
    return (*_followed(path), False)


def _followed(path: Path) -> tuple[os.stat_result | None, Exception | None]:
    try:
        return os.stat(path), None
    except (OSError, ValueError) as error:
        return None, error


def _same(mine: FileIdentity, other: Path) -> bool:
    # Two existing files are one file exactly when they share an inode (a resolved path or a hard link);
    # an existing file and a missing one never are; two missing ones are if they resolve to one path.
    if mine.unnamed:  # an lstat of the other says all, but where both are missing under one name
        theirs = FileIdentity(other)
        if theirs.inode is not None or (theirs.unnamed and other.name != mine.path.name):
            return False
        return _same_real(mine, other)
    theirs_inode = _inode(other)
    if mine.inode is not None or theirs_inode is not None:
        return mine.inode == theirs_inode
    return _same_real(mine, other)


def _same_real(mine: FileIdentity, other: Path) -> bool:
    try:
        return mine.real() == real_path(other)
    except OSError:
        return False


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino
