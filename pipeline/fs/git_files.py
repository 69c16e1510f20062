"""What git shares of a checkout: whether it tracks a file, and the clone's own list of files it leaves out
(``.git/info/exclude``, never committed), where a personal file of ours is listed so `git status` stays clean.

Whether a file is tracked is git's own answer (``git ls-files``); where git cannot answer (missing, or no answer in
time), a file that exists in a checkout counts as tracked: a file we cannot show to be personal is treated as
shared.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .. import inputs
from .projects import git_top_level, info_exclude

GIT_TIMEOUT_S = 5.0  # `git ls-files` answers in milliseconds; one that does not has met a dead mount


def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` in the checkout holding it (False outside a checkout)."""
    path = path.resolve()
    top = git_top_level(path.parent)
    git = shutil.which("git")
    if top is None:
        return False
    if git is None:
        return path.exists()
    environment = {name: value for name, value in inputs.environment().items() if not name.startswith("GIT_")}
    try:
        done = subprocess.run([git, "-C", str(top), "ls-files", "--error-unmatch", "--",
                               path.relative_to(top).as_posix()], capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=GIT_TIMEOUT_S, check=False, env=environment)
    except (OSError, subprocess.SubprocessError):
        return path.exists()
    return done.returncode == 0


def in_checkout(path: Path) -> bool:
    """Whether ``path`` lies in a git checkout."""
    return git_top_level(path.resolve().parent) is not None


def exclude(path: Path) -> Path | None:
    """List ``path`` in its checkout's ``.git/info/exclude`` (this clone only); the exclude file, or None when
    ``path`` is in no checkout or the file lists it already."""
    path = path.resolve()
    top = git_top_level(path.parent)
    if top is None:
        return None
    listed = info_exclude(top)
    line = "/" + path.relative_to(top).as_posix()
    text = listed.read_text(encoding="utf-8", errors="replace") if listed.is_file() else ""
    if line in text.splitlines():
        return None
    listed.parent.mkdir(parents=True, exist_ok=True)
    with listed.open("a", encoding="utf-8") as handle:
        handle.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
    return listed
