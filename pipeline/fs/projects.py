"""A project's identity: what a project-scoped fact is kept under, so it survives what users do to checkouts.

A repository with a remote is its normalised remote URL (``github.com/x/y``):
two clones of one repository share their facts, wherever they sit. One
without a remote is its root directory (the git top level); a directory that
is not in a repository is itself. The top level is found by walking up to
``.git`` (a directory, or a worktree's file pointing at one), and the remote is
read from the repository's ``config`` as git reads it, includes and all
(:mod:`.git_config`: by ``git config`` itself when it is on PATH).

The repository's own files (``.git`` when it is a file, ``commondir``, ``HEAD``,
``config``) are opened without blocking and used only when each is a regular
file, and the whole look has a deadline: a FIFO, a socket, a device, a config
over :data:`~.git_config.MAX_CONFIG_BYTES`, or a slow mount means no remote (the
project is then the directory, as for a repository without one), never a hang.

A remote is read once per state of every file the reading consulted (the config,
the files it includes, those its includes name but that are missing): a host
looking up its directory's project per request runs git only when one changed.
While a recording is open (:mod:`pipeline.inputs`), each of those files is noted,
read by git or not, so a copy of an answer made from the project is keyed by them.
"""

from __future__ import annotations

import errno
import re
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import caches, inputs
from .git_config import GIT_TIMEOUT_S, MAX_CONFIG_BYTES, read_config, remote_urls
from .read import probe_regular, read_file, within

LOOK_TIMEOUT_S = GIT_TIMEOUT_S + 1.0  # the whole look at a repository: its files, then git's answer
MAX_POINTER_BYTES = 4096  # a `.git` file or `commondir` holds one path
MAX_CONFIGS = 256  # remotes remembered, by repository and config file; the least recently used goes first


@dataclass(frozen=True, slots=True)
class _Kept:
    """A remote as read, and the state of every file its reading consulted (:func:`pipeline.inputs.path_state`)."""

    consulted: tuple[str, ...]
    states: tuple[Any, ...]
    remote: str | None


# (git directory, config) -> what was read. The git directory is part of the key: linked worktrees share one
# config, and an includeIf "gitdir:" in it may answer each differently. A race between threads costs one extra read.
_REMOTES = caches.cache("projects.remotes", owner="process", key="a checkout's git directory and config file",
                        bound=MAX_CONFIGS, holds_text=False)


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
    """The ``origin`` remote's URL (else the first remote's), from the repository's config; None when it has none,
    or when its files cannot be read as git would read them, without blocking, in time (see the module)."""
    try:
        return within(LOOK_TIMEOUT_S, lambda: _remote_url(top))
    except OSError:  # TimeoutError among them
        return None


def _remote_url(top: Path) -> str | None:
    git_dir, config = repository_files(top)
    key = (str(git_dir), str(config))
    kept: _Kept | None = _REMOTES.get(key)
    known = kept.consulted if kept is not None else (str(config),)
    before = _states(known)
    if kept is not None and before == kept.states:
        _note(known)
        return kept.remote
    read = read_config(config, git_dir)
    found = _Kept(tuple(read.consulted), _states(tuple(read.consulted)), _chosen(remote_urls(read.entries)))
    after = dict(zip(found.consulted, found.states, strict=True))
    if all(after.get(path, state) == state for path, state in zip(known, before, strict=True)):
        _keep(key, found)  # else a file changed while it was read: what was read may be older than its state
    _note(found.consulted)
    return found.remote


def _keep(key: tuple[str, str], found: _Kept) -> None:
    _REMOTES.put(key, found)


def repository_files(top: Path) -> tuple[Path, Path]:
    """The checkout's git directory and the config its remotes are read from (a linked worktree's is the main
    repository's), each of its files checked as git will meet it: OSError for one that is not a regular file
    (a FIFO, a socket, a device), a config over MAX_CONFIG_BYTES, or one that cannot be read."""
    git_dir = _git_dir(top)
    with suppress(FileNotFoundError, NotADirectoryError):
        probe_regular(git_dir / "HEAD", confine_symlinks=False)  # git reads it to know a repository
    config = _common_dir(git_dir) / "config"
    if probe_regular(config, confine_symlinks=False) > MAX_CONFIG_BYTES:
        raise OSError(errno.EFBIG, f"is larger than {MAX_CONFIG_BYTES} bytes", str(config))
    return git_dir, config


def info_exclude(top: Path) -> Path:
    """The checkout's own exclude file (a linked worktree's is its main repository's, as git reads it)."""
    return _common_dir(_git_dir(top)) / "info" / "exclude"


def _git_dir(top: Path) -> Path:
    dot_git = top / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _pointer(dot_git)  # a linked worktree or a submodule: "gitdir: PATH"
    if not text.startswith("gitdir:"):
        raise OSError(errno.EINVAL, "names no git directory", str(dot_git))
    return (top / text.removeprefix("gitdir:").strip()).resolve()


def _common_dir(git_dir: Path) -> Path:
    """Where a linked worktree keeps its remotes: the main repository, named in its ``commondir``."""
    try:
        return (git_dir / _pointer(git_dir / "commondir")).resolve()
    except (FileNotFoundError, NotADirectoryError):
        return git_dir


def _pointer(path: Path) -> str:
    """The one path a small git file holds (read without blocking: a FIFO is an OSError, never a wait)."""
    found = read_file(path, MAX_POINTER_BYTES, confine_symlinks=False)
    if found.truncated:
        raise OSError(errno.EFBIG, f"is larger than {MAX_POINTER_BYTES} bytes", str(path))
    return found.data.decode("utf-8", "replace").strip()


def _states(paths: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(_frozen(inputs.path_state(path)) for path in paths)


def _frozen(state: Any) -> Any:
    return tuple(state) if isinstance(state, list) else state


def _note(consulted: tuple[str, ...]) -> None:
    """Note every file the remote's reading consulted, for a recording open now (git's reads are not seen)."""
    if inputs.recording_now():
        for path in consulted:
            inputs.note_file(path)


def _chosen(remotes: list[tuple[str, str]]) -> str | None:
    """``origin``'s first URL (as ``git remote get-url`` gives it), else the first remote's."""
    url = next((url for name, url in remotes if name == "origin" and url.strip()), None) or \
        next((url for _, url in remotes if url.strip()), None)
    return url.strip() if url else None


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
