"""Where `persona edit` puts the file it opens, and finding the ones it kept, so a forget can remove them.

Each edit gets a private directory of its own (``$TMPDIR/persona-edit-`` and a random suffix, from ``mkdtemp``;
0700) holding ``persona-<profile>.yaml`` (0600, the profile as its slug: two
profiles never share a name). A file is kept after an edit that was not
applied, so nothing typed is lost; it holds the profile's facts as they were
shown. A later forget of a fact removes the kept files of that profile that
hold its text, each with its directory (the editor's swap and backup files
beside it hold the text too): only this user's, found by name, never through a
symlink, and never another profile's.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from .locations import profile_slug
from .read import read_file

PREFIX = "persona-edit-"
MAX_BYTES = 64 * 1024 * 1024  # a kept file past this is not read: it is removed as one that may hold the text


def file_name(profile: str) -> str:
    return f"persona-{profile_slug(profile)}.yaml"


def new_edit_file(profile: str) -> Path:
    """The path of a new edit file of ``profile``, in a private directory made for it."""
    return Path(tempfile.mkdtemp(prefix=PREFIX)) / file_name(profile)


def edit_files_of(profile: str) -> list[Path]:
    """The edit files of ``profile`` in this process's temporary directory that are this user's own."""
    root = Path(tempfile.gettempdir())
    found = [directory / file_name(profile) for directory in sorted(root.glob(PREFIX + "*"))]
    return [path for path in found if _ours(path.parent, stat.S_ISDIR) and _ours(path, stat.S_ISREG)]


def remove_holding(profile: str, holds: Callable[[str], bool], *, spare: Path | None = None) -> list[Path]:
    """Remove the edit files of ``profile`` (but ``spare``, the running edit's own) whose text ``holds`` says holds
    a forgotten text, each with its private directory; the files removed."""
    removed = []
    for path in edit_files_of(profile):
        if path != spare and _holds(path, holds):
            shutil.rmtree(path.parent, ignore_errors=True)  # never follows a symlink inside it
            removed.append(path)
    return removed


def _ours(path: Path, kind: Callable[[int], bool]) -> bool:
    try:
        info = path.lstat()  # a symlink is never ours to follow
    except OSError:
        return False
    return kind(info.st_mode) and info.st_uid == os.geteuid()


def _holds(path: Path, holds: Callable[[str], bool]) -> bool:
    try:
        read = read_file(path, MAX_BYTES)
    except OSError:
        return False
    return read.truncated or holds(read.data.decode("utf-8", "replace"))
