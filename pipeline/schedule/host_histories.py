"""After a forget: the text out of the histories the hosts keep (their transcripts and databases), which a resumed
session sends again.

Where each host keeps them, and how it writes them (which fields are text, which are structure), is data in its
module (:class:`~pipeline.hosts.model.History`); the homes come from the environment as the hosts read it
(``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``, ``HERMES_HOME``). JSON and JSON Lines files
are rewritten by :mod:`pipeline.fs.json_scrub`, a host's SQLite databases scrubbed in place by
:mod:`pipeline.fs.host_sqlite`; a database no module describes is only read, and named when it holds the text. A
folder a symbolic link leads to is searched when it stays inside the home (or the host's folder), and named
otherwise. Each host's folder is scrubbed under a lock of ours, which also sweeps the temporary files a killed
scrub left there.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import caches, inputs
from ..fs.host_sqlite import file_key, scrub_database
from ..fs.json_probe import Probe
from ..fs.json_scrub import Held, Scrubbed, open_files, scrub_file, sweep_temps
from ..fs.lock import file_lock, lock_path
from ..fs.text_find import Finder, Needle, fold, needle
from ..hosts.model import History
from ..hosts.registry import HOSTS
from ..render.sanitize import inline, xml
from ..text import normal_form

log = logging.getLogger(__name__)
MAX_BYTES = 100_000_000  # a JSON document (not JSON Lines) past this is named, not read whole
LOCK_WAIT_S = 30.0  # another scrub of the same folder holds its lock this long at most before this one names it


@dataclass
class HostHistories:
    """What a scrub did: the files changed (or, kept, those that hold the text), those it left and why (``retry``:
    a later run can finish them, and the journal keeps the forget pending until one does), and those holding a
    fact of one or two short words where it is not replaced."""

    kept: bool = False  # --keep-host-histories: nothing changed, ``files`` only hold the text
    files: list[dict[str, Any]] = field(default_factory=list)  # host, path, replaced (and memory: a memory file)
    left: list[dict[str, Any]] = field(default_factory=list)  # host, path, reason, retry
    short: list[dict[str, str]] = field(default_factory=list)  # host, path
    swept: int = 0  # temporary files a killed scrub had left, removed

    @property
    def finished(self) -> bool:
        """Whether nothing is left that a later run could change (the journal's entries may go)."""
        return not any(item["retry"] for item in self.left)

    @property
    def complete(self) -> bool:
        """Whether every place that held the text was scrubbed (the forget's exit code)."""
        return self.kept or not (self.left or self.short)

    def to_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "files": self.files, "left": self.left, "short": self.short,
                "swept": self.swept, "complete": self.complete}


def needles(key: bytes, texts: Iterable[str]) -> list[Needle]:
    """What a forget looks for in the histories: each text's normal form, and its rendered XML-escaped one."""
    forms = {form for text in texts for form in (normal_form(text), normal_form(xml(inline(text)))) if form}
    return [needle(key, form) for form in sorted(forms)]


def history_folder(history: History, environ: dict[str, str] | None = None) -> Path:
    """The folder a host keeps its history in, resolved as the host resolves it."""
    def read(name: str) -> str | None:
        return inputs.environ(name) if environ is None else environ.get(name)

    if history.folder_env and (folder := read(history.folder_env)):
        return inputs.expanded(Path(folder))
    home = inputs.expanded(Path(found)) if history.home_env and (found := read(history.home_env)) else None
    return (home or Path(inputs.home())) / history.folder


def scrub_histories(found: list[Needle], key: bytes = b"", *, keep: bool = False,
                    max_bytes: int = MAX_BYTES) -> HostHistories:
    """Replace the needles' texts in every host's history (``keep``: only find them) and name each place it could
    not change safely, and why. ``key``: the store's key, for needles known by their hash alone."""
    done = HostHistories(kept=keep)
    if not found:
        return done
    search = _Search(Probe(found), Finder(found, key), keep, max_bytes)
    for host, history in _histories():
        folder = history_folder(history)
        if folder.is_dir():
            _scrub_host(host, history, folder, search, done)
    from .memory_scrub import scrub_memories  # the memory files' formats load only when a text is looked for

    for host, outcome in scrub_memories(search.finder, keep=keep, held=search.held):  # what the hosts remember
        _record(host, outcome, done, memory=True)
    if done.files or done.left or done.short:  # paths only: the text itself never reaches the log
        log.info("host histories: %d file(s) %s, %d left, %d short", len(done.files),
                 "hold the text" if keep else "scrubbed", len(done.left), len(done.short))
    return done


class _OpenFiles:
    """Who holds which file open, read from /proc at the first ask of one search (a run's answer, never kept
    past it: a forget's next search asks again)."""

    def __init__(self) -> None:
        self._found: dict[tuple[int, int], int] | None = None

    def __call__(self) -> dict[tuple[int, int], int]:
        if self._found is None:
            self._found = open_files()
        return self._found


@dataclass
class _Search:
    probe: Probe
    finder: Finder
    keep: bool
    max_bytes: int
    held: Held = field(default_factory=_OpenFiles)


def _histories() -> Iterator[tuple[str, History]]:
    for host in HOSTS.values():
        if host.history is not None:
            yield host.display, host.history


def _scrub_host(host: str, history: History, folder: Path, search: _Search, done: HostHistories) -> None:
    try:
        with file_lock(lock_path(folder), LOCK_WAIT_S):
            _scrub_folder(host, history, folder, search, done)
    except TimeoutError:  # filelock.Timeout is one
        done.left.append({"host": host, "path": str(folder), "retry": True,
                          "reason": "another persona-tier scrub of this folder is running; `persona scrub` finishes "
                                    "it"})


def _scrub_folder(host: str, history: History, folder: Path, search: _Search, done: HostHistories) -> None:
    walk = _Walk(folder, history.files + history.stores)
    files = walk.matching(history.files)
    done.swept += sum(sweep_temps(directory) for directory in walk.directories)
    for path in walk.outside:
        done.left.append({"host": host, "path": str(path), "retry": False,
                          "reason": "a symbolic link to a folder outside your home: persona-tier does not follow it "
                                    "there; scrub or delete that folder yourself"})
    moved = {}
    for path in files:
        outcome = scrub_file(path, search.probe, search.finder, history.format, dry_run=search.keep,
                             held=search.held, max_bytes=search.max_bytes)
        _record(host, outcome, done)
        if outcome is not None and outcome.moved and (thread := file_key(path)) is not None:
            moved[thread] = outcome.shift
    for database in history.databases:
        path = folder / database.file
        if path.is_file():
            _record(host, scrub_database(path, database, search.probe, search.finder, history.format,
                                         dry_run=search.keep, held=search.held, moved=moved), done)
    for path in walk.matching(history.stores):
        if search.finder.blind or _holds(path, search):
            done.left.append({"host": host, "path": str(path), "reason": history.store_reason, "retry": False})


def _record(host: str, outcome: Scrubbed | None, done: HostHistories, *, memory: bool = False) -> None:
    if outcome is None:
        return
    if outcome.replaced:  # a memory file's entries are taken out whole: "replaced" counts them
        done.files.append({"host": host, "path": str(outcome.path), "replaced": outcome.replaced,
                           **({"memory": True} if memory else {})})
    if outcome.reason:
        done.left.append({"host": host, "path": str(outcome.path), "reason": outcome.reason, "retry": outcome.retry})
    if outcome.short:
        done.short.append({"host": host, "path": str(outcome.path)})


def _holds(path: Path, search: _Search, chunk: int = 1 << 20) -> bool:
    """Whether a database no module describes holds a text anywhere in its bytes, in its normal form (read in
    overlapping chunks; no word boundary: a record's header byte may be a letter)."""
    forms = [found.normal for found in search.finder.needles if found.normal]
    tail = b""
    try:
        with path.open("rb") as handle:
            while block := handle.read(chunk):
                data = tail + block
                if search.probe.may_hold(data):
                    normal = " ".join(fold(data.decode("utf-8", "replace")).split())
                    if any(form in normal for form in forms):
                        return True
                tail = data[-4096:]
    except OSError:
        return False
    return False


class _Walk:
    """The files under a host's folder that its patterns can reach, a symbolic link to a folder followed when it
    stays inside the home (or the folder itself), and named otherwise. A folder no pattern reaches (a plugin's
    source, a cache) is never entered nor named: it holds no history."""

    def __init__(self, folder: Path, patterns: tuple[str, ...]) -> None:
        self.folder = folder
        self.patterns = [pattern.split("/") for pattern in patterns]
        self.roots = [os.path.realpath(folder), os.path.realpath(inputs.home())]
        self.directories: list[Path] = []
        self.outside: list[Path] = []
        self._files: dict[str, Path] | None = None

    def matching(self, patterns: tuple[str, ...]) -> list[Path]:
        """The regular files whose path under the folder matches a glob of ``patterns`` (``**`` any depth)."""
        if self._files is None:
            self._files = dict(self._walk())
        regexes = [_glob(pattern) for pattern in patterns]
        return sorted({path for relative, path in self._files.items() if any(r.fullmatch(relative) for r in regexes)})

    def _walk(self) -> Iterator[tuple[str, Path]]:
        seen: set[str] = set()
        stack = [(self.folder, "")]
        while stack:
            directory, relative = stack.pop()
            real = os.path.realpath(directory)
            if real in seen:
                continue
            seen.add(real)
            self.directories.append(directory)
            yield from self._entries(directory, relative, stack)

    def _entries(self, directory: Path, relative: str, stack: list[tuple[Path, str]]) -> Iterator[tuple[str, Path]]:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            path, name = Path(entry.path), relative + entry.name
            if entry.is_dir() and not self._reachable(name):
                continue
            if entry.is_symlink() and not self._inside(path):
                if entry.is_dir() or (entry.is_file() and self._matches(name)):
                    self.outside.append(path)
            elif entry.is_dir():
                stack.append((path, name + "/"))
            elif entry.is_file():
                yield name, Path(os.path.realpath(path)) if entry.is_symlink() else path

    def _reachable(self, relative: str) -> bool:
        """Whether a file matching a pattern can lie under the folder at ``relative`` (``**`` any depth)."""
        parts = relative.split("/")
        return any(_leads(pattern, parts) for pattern in self.patterns)

    def _matches(self, relative: str) -> bool:
        return any(_glob("/".join(pattern)).fullmatch(relative) for pattern in self.patterns)

    def _inside(self, path: Path) -> bool:
        real = os.path.realpath(path)
        return any(real == root or real.startswith(root + os.sep) for root in self.roots)


def _leads(pattern: list[str], folders: list[str]) -> bool:
    for depth, folder in enumerate(folders):
        if depth >= len(pattern) - 1:  # the pattern's last part names a file
            return False
        if pattern[depth] == "**":
            return True
        if not _glob(pattern[depth]).fullmatch(folder):
            return False
    return True


@caches.memo("host_histories.glob", owner="process", key="a host history's glob pattern", bound=64)
def _glob(pattern: str) -> re.Pattern[str]:
    """A glob as a regular expression over a relative path: ``**/`` any folders (or none), ``*`` within a name."""
    out = re.escape(pattern).replace(r"\*\*/", "\x00").replace(r"\*", "[^/]*").replace(r"\?", "[^/]")
    return re.compile(out.replace("\x00", "(?:[^/]+/)*"))
