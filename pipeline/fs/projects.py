"""A project's identity: what a project-scoped fact is kept under, so it survives what users do to checkouts.

A repository with a remote is its normalised remote URL (``github.com/x/y``):
two clones of one repository share their facts, wherever they sit. One
without a remote is its root directory (the git top level); a directory that
is not in a repository is itself. Nothing here runs git: the top level is
found by walking up to ``.git`` (a directory, or a worktree's file pointing at
one), and the remote is read from the repository's ``config`` as git reads it
(:mod:`.git_config`: by ``git config`` itself when it is on PATH). A config is
read once per state (its size, times and inode): a host looking up its
directory's project per request runs git only when the file changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import inputs
from .git_config import remote_urls

MAX_CONFIG_BYTES = 1_000_000  # a git config larger than this is not read (the project is then its directory)
MAX_CONFIGS = 256  # remotes remembered, by config file and state; a process that sees more starts over
_REMOTES: dict[tuple[str, int, int, int, int], str | None] = {}  # a race between threads costs one extra read


@dataclass(frozen=True, slots=True)
class Project:
    """A project: the identity its facts are kept under, and the directory it was found from."""

    identity: str  # github.com/x/y, or an absolute directory
    root: Path  # the git top level, or the directory itself


def project_of(directory: Path) -> Project:
    """The project ``directory`` belongs to (see the module)."""
    start = inputs.expanded(directory).resolve()
    top = git_top_level(start)
    if top is None:
        return Project(str(start), start)
    remote = remote_url(top)
    return Project(normalise_remote(remote, base=top) if remote else str(top), top)


def identity_of(given: str, *, relative: bool = True) -> str:
    """The project a user names: a directory (absolute or ``~``; with ``relative``, one relative to the working
    directory too: ``.``, ``./app``, or the name of a directory there) is its checkout's project; anything else is
    a remote URL or an identity as `persona project list` shows it, normalised as a remote is
    (``GitHub.com/x/y.git`` is ``github.com/x/y``). Without ``relative`` (a config file, read from anywhere), a
    relative path is a ValueError: what it names would change with the directory persona-tier runs in."""
    text = given.strip()
    if text.startswith(("/", "~")):
        return project_of(Path(text)).identity
    if text.startswith(".") or (relative and Path(text).is_dir()):
        if not relative:
            raise ValueError(f"project {given!r} is a relative path; give an absolute path or the project's "
                             "identity (github.com/x/y)")
        return project_of(Path(text)).identity
    if "://" in text or "@" in text.partition("/")[0]:
        return normalise_remote(text)
    return normalise_remote(f"https://{text}")


def git_top_level(directory: Path) -> Path | None:
    """The nearest directory at or above ``directory`` that holds ``.git``, or None."""
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def remote_url(top: Path) -> str | None:
    """The ``origin`` remote's URL (else the first remote's), from the repository's config; None when it has none."""
    config = _git_dir(top) / "config"
    common = _git_dir(top) / "commondir"  # a linked worktree keeps its remotes in the main repository's config
    try:
        if common.is_file():
            config = (_git_dir(top) / common.read_text(encoding="utf-8").strip()).resolve() / "config"
        info = config.stat()
    except OSError:
        return None
    if info.st_size > MAX_CONFIG_BYTES:
        return None
    state = (str(config), info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    if state not in _REMOTES:
        if len(_REMOTES) >= MAX_CONFIGS:
            _REMOTES.clear()
        _REMOTES[state] = _chosen(remote_urls(config) or [])
    return _REMOTES[state]


def _chosen(remotes: list[tuple[str, str]]) -> str | None:
    """``origin``'s first URL (as ``git remote get-url`` gives it), else the first remote's."""
    url = next((url for name, url in remotes if name == "origin" and url.strip()), None) or \
        next((url for _, url in remotes if url.strip()), None)
    return url.strip() if url else None


def _git_dir(top: Path) -> Path:
    dot_git = top / ".git"
    if dot_git.is_file():  # a linked worktree or a submodule: "gitdir: PATH"
        text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            return (top / text.removeprefix("gitdir:").strip()).resolve()
    return dot_git


_SCP_LIKE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>(?!//).+)$")  # git@github.com:x/y.git


def normalise_remote(url: str, *, base: Path | None = None) -> str:
    """``git@GitHub.com:x/y.git``, ``https://user@github.com/x/y/`` and ``ssh://git@github.com:22/x/y`` are all
    ``github.com/x/y``: the host in lower case, no user, port, scheme or ``.git``."""
    text = url.strip()
    scp = None if "://" in text else _SCP_LIKE.match(text)
    if scp:
        host, path = scp.group("host"), scp.group("path")
    elif "://" in text:
        rest = text.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host = authority.rpartition("@")[2].partition(":")[0] if not authority.startswith("[") else authority
    else:  # a local path used as a remote: the path is its identity (a relative one is relative to the checkout)
        local = inputs.expanded(Path(text))
        return str(((base / local) if base is not None and not local.is_absolute() else local).resolve())
    path = path.strip("/")
    path = path[:-4] if path.endswith(".git") else path
    return f"{host.lower()}/{path}" if host else path
