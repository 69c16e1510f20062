"""What a run read: the inputs a copy of its answer is keyed by, noted by the run itself as it reads them.

A copy we keep of an answer (a delivery's text, a status) stands only while everything it was made from is as it
was. Nothing lists those things beside the code that reads them: while a :func:`recording` is open, the run notes
each input as it meets it, and the copy's key is that list, with each input's state:

- every file opened for reading (Python's ``open`` audit event: config files, templates and whatever they include,
  git's files) and every path looked at (``os.stat``/``os.lstat``, which ``exists()``, ``is_file()`` and the
  like ask): a regular file by its identity (device, inode, size, modification and change times), a directory by
  which one it is, a missing path as missing; a path read through a symlink is stat'ed as spelled, so a symlink
  pointed elsewhere is a different identity;
- every directory listed (``os.listdir``/``os.scandir``): its identity and times (an entry added or removed moves
  them);
- every environment variable read, through :func:`environ` (a name) or :func:`environ_prefixed` (a prefix, matched
  whatever its case, as the settings layer matches it): the layout test keeps every read of the environment here;
- the package's own code (every file of it and of the shipped templates: an editable install is covered);
- what a store says of a profile (:func:`note`, with a checker registered by the store's module), and the time the
  answer stops standing (:func:`note_deadline`).

A key :func:`holds` while every input is in its noted state. Anything that cannot be compared (a FIFO, a device,
an error, a kind no checker is registered for) makes the recording unusable: the full path answers. This module
imports nothing of the package and nothing heavy: the fast path compares with it alone.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, cast

MISSING = "-"
DIRECTORY = "d"
# A key's entry: (kind, subject) -> state, every part JSON's own (str, int, list, None).
Entry = tuple[str, str]
State = Any
Checker = Callable[[str], State]
_CHECKERS: dict[str, Checker] = {}  # a registry (filled at import by the modules that own a kind), not a cache
_CODE_SUFFIXES = (".py", ".pyc", ".pyi", ".so", ".pyd", ".pth", ".dist-info", ".egg-link")
_PATH_KINDS = ("file", "link", "listing")
# The kernel's own files (a process's, a device's): never what an answer is made of.
_SYSTEM = ("/proc/", "/sys/", "/dev/")


class Recorder:
    """One open recording: the inputs noted so far, and why it cannot be used, when it cannot."""

    def __init__(self) -> None:
        self.entries: dict[Entry, State] = {}
        self.unusable: str | None = None
        self.covered: set[str] = set()

    def add(self, entry: Entry, state: State) -> None:
        """Note ``entry`` in ``state``; its first state stands (what the run saw first is what it used)."""
        if entry[1] in self.covered and entry[0] in _PATH_KINDS:
            return
        if entry not in self.entries:
            self.entries[entry] = state
            if isinstance(state, str) and state.startswith("!"):
                self.unusable = self.unusable or f"{entry[0]} {entry[1]}: {state[1:]}"

    def deadline(self) -> float | None:
        until = self.entries.get(("until", ""))
        return None if until is None else float(until)


_open: list[Recorder] = []
_guard = threading.Lock()
_real_stat, _real_lstat = os.stat, os.lstat


def recording_now() -> bool:
    """Whether a recording is open (a reader may skip work that only feeds one)."""
    return bool(_open)


@contextmanager
def recording() -> Iterator[Recorder]:
    """Note every input met inside the block (from any thread) into a new :class:`Recorder`."""
    recorder = Recorder()
    with _guard:
        if not _open:
            _start()
        _open.append(recorder)
    try:
        yield recorder
    finally:
        with _guard:
            _open.remove(recorder)
            if not _open:
                _stop()


def note(kind: str, subject: str, state: State) -> None:
    """Note an input of a kind a checker compares (see :func:`register`), in ``state``."""
    for recorder in tuple(_open):
        recorder.add((kind, subject), state)


def wants(kind: str, subject: str) -> bool:
    """Whether an open recording has not noted ``(kind, subject)`` yet (a costly state is then worth reading)."""
    return any((kind, subject) not in recorder.entries for recorder in tuple(_open))


def covered(paths: list[str]) -> None:
    """These files are compared by another input (a database's, by what the store says of it): their own states,
    which move with every write to any of its tables, are not inputs."""
    for recorder in tuple(_open):
        recorder.covered.update(paths)
        for kind in _PATH_KINDS:
            for path in paths:
                recorder.entries.pop((kind, path), None)


def register(kind: str, checker: Checker) -> None:
    """Let :func:`holds` compare inputs of ``kind``: ``checker(subject)`` is the subject's state now."""
    _CHECKERS[kind] = checker


def note_deadline(when: float) -> None:
    """The answer stands until ``when`` (seconds since the epoch) at most: the earliest deadline noted wins."""
    for recorder in tuple(_open):
        current = recorder.deadline()
        if current is None or when < current:
            recorder.entries[("until", "")] = when


# --- files and directories -------------------------------------------------------------------------------------

def path_state(path: str, *, follow: bool = True) -> State:
    """A path's state: a regular file's identity, a directory's (which one), missing, or unusable ("!...")."""
    try:
        info = _real_stat(path) if follow else _real_lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except (OSError, ValueError) as error:
        return f"!cannot be looked at ({error.__class__.__name__})"
    if stat.S_ISREG(info.st_mode):
        return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
    if stat.S_ISDIR(info.st_mode):
        return [DIRECTORY, info.st_dev, info.st_ino]
    if stat.S_ISLNK(info.st_mode):  # lstat of a symlink: the link itself (re-pointing one makes a new inode)
        return ["l", info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]
    return f"!not a regular file ({stat.filemode(info.st_mode)[0]})"


def listing_state(path: str) -> State:
    """A listed directory's state: which one, and its times (an entry added, removed or renamed moves them)."""
    try:
        info = _real_stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except (OSError, ValueError) as error:
        return f"!cannot be listed ({error.__class__.__name__})"
    return [info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns]


def note_file(path: str | os.PathLike[str]) -> None:
    """Note a file read or looked for (the audit hook notes opens; this is for reads it cannot see)."""
    if _open:
        spelled = _absolute(path)
        if spelled is not None:
            note("file", spelled, path_state(spelled))


def _absolute(path: Any) -> str | None:
    if isinstance(path, int):  # a descriptor: what it was opened from was noted then
        return None
    try:
        text = os.fsdecode(path)
    except (TypeError, ValueError):
        return None
    return text if os.path.isabs(text) else os.path.join(os.getcwd(), text)


# Where the interpreter and the installed packages live: what is read there is code, which changes with an
# install (our own package's files are the "code" input; the rest are the environment the process runs in).
_INSTALLED = tuple(dict.fromkeys(os.path.join(os.path.realpath(prefix), "") for prefix in
                                 (sys.prefix, sys.base_prefix, sys.exec_prefix)))


def _is_code(path: str) -> bool:
    return path.endswith(_CODE_SUFFIXES) or "/__pycache__/" in path or path.startswith(_INSTALLED + _SYSTEM)


def _noting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    follow = kwargs.get("follow_symlinks", True)
    try:
        return _real_stat(path, *args, **kwargs)
    finally:
        _note_looked(path, follow=follow and "dir_fd" not in kwargs)


def _noting_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
    try:
        return _real_lstat(path, *args, **kwargs)
    finally:
        _note_looked(path, follow=False)


def _note_looked(path: Any, *, follow: bool) -> None:
    spelled = _absolute(path) if _open else None
    if spelled is not None and not _is_code(spelled):
        note("file" if follow else "link", spelled, path_state(spelled, follow=follow))


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _open:
        return
    if event == "open":
        path, mode, flags = args
        if _reads(mode, flags):
            _note_looked(path, follow=True)
    elif event in ("os.listdir", "os.scandir"):
        spelled = _absolute(args[0] if args[0] is not None else ".")
        if spelled is not None and not _is_code(os.path.join(spelled, "")) and not _on_sys_path(spelled):
            note("listing", spelled, listing_state(spelled))


def _on_sys_path(folder: str) -> bool:
    """A folder Python looks in for code and installed packages' metadata (the working directory under
    ``python -m``): installed code is not an input (see :data:`_INSTALLED`)."""
    return folder in {os.path.abspath(entry or ".") for entry in sys.path}


def _reads(mode: Any, flags: Any) -> bool:
    """Whether an open only reads (a write is the run's own output, or a lock: not an input)."""
    if isinstance(mode, str):
        return not any(char in mode for char in "wax+")
    return isinstance(flags, int) and flags & os.O_ACCMODE == os.O_RDONLY


_hooked = False


def _start() -> None:
    global _hooked
    if not _hooked:  # an audit hook cannot be removed: it does nothing while no recording is open
        sys.addaudithook(_audit)
        _hooked = True
    os.stat, os.lstat = _noting_stat, _noting_lstat


def _stop() -> None:
    os.stat, os.lstat = _real_stat, _real_lstat


# --- the environment -------------------------------------------------------------------------------------------

def environ(name: str) -> str | None:
    """The variable ``name`` (None when unset), noted."""
    value = os.environ.get(name)
    if _open:
        note("env", name, value)
    return value


def environ_prefixed(prefix: str) -> dict[str, str]:
    """Every variable whose name starts with ``prefix`` whatever its case (as pydantic-settings matches names),
    noted as one input: one more, one fewer or one changed is a change."""
    found = _prefixed(prefix)
    if _open:
        note("env-prefix", prefix, sorted(found.items()))
    return found


def _prefixed(prefix: str) -> dict[str, str]:
    upper = prefix.upper()
    return {name: value for name, value in os.environ.items() if name.upper().startswith(upper)}


def home() -> str:
    """The user's home as ``os.path.expanduser`` finds it (``$HOME``, else the password database), noted."""
    environ("HOME")
    return os.path.expanduser("~")


def expand_user(path: str) -> str:
    """``path`` with a leading ``~`` expanded (``$HOME`` noted); ``~user`` as the password database says."""
    if path.startswith("~"):
        environ("HOME")
    return os.path.expanduser(path)


PathT = TypeVar("PathT", bound="str | os.PathLike[str]")


def expanded(path: PathT) -> PathT:
    """``path`` (a string or a path object, given back as the same type) with a leading ``~`` expanded."""
    text: str = os.fspath(path)  # type: ignore[arg-type]
    if not text.startswith("~"):
        return path
    found = expand_user(text)
    return cast("PathT", found if isinstance(path, str) else type(path)(found))  # type: ignore[call-arg]


def environment() -> os._Environ[str]:
    """The whole environment, for a child process's (never read for an answer: nothing is noted)."""
    return os.environ


# --- the package's code ----------------------------------------------------------------------------------------

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def code_folders() -> tuple[str, ...]:
    """The package's folder, and the shipped templates' beside it in a checkout (inside it in a wheel)."""
    beside = os.path.join(os.path.dirname(_PACKAGE), "templates")
    return (_PACKAGE, beside) if os.path.isdir(beside) else (_PACKAGE,)


def code_stamp() -> str:
    """Every file of the package's code and templates, by name and identity: any change to any of them (an
    upgrade, an edit in an editable install) is a new stamp."""
    import hashlib

    digest = hashlib.sha256()
    for folder in code_folders():
        for path, info in _files_under(folder):
            digest.update(f"{path}\0{info.st_ino}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\n"
                          .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _files_under(folder: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _files_under(entry.path)
        else:
            yield entry.path, entry.stat()


def note_code() -> None:
    """Note the package's code as an input (every recording of an answer does)."""
    if _open:
        note("code", "", code_stamp())


# --- comparing -------------------------------------------------------------------------------------------------

def state_now(kind: str, subject: str) -> State:
    """What :func:`note` would note of ``(kind, subject)`` now; "!..." when it cannot be told."""
    if kind == "file":
        return path_state(subject)
    if kind == "link":
        return path_state(subject, follow=False)
    if kind == "listing":
        return listing_state(subject)
    if kind == "env":
        return os.environ.get(subject)
    if kind == "env-prefix":
        return sorted(_prefixed(subject).items())
    if kind == "code":
        return code_stamp()
    checker = _CHECKERS.get(kind)
    return "!no checker" if checker is None else checker(subject)


def holds(entries: dict[Entry, State] | list[list[Any]], *, now: float | None = None) -> bool:
    """Whether every input is still in its noted state (and no deadline has passed)."""
    pairs = entries.items() if isinstance(entries, dict) else (((kind, subject), state)
                                                                 for kind, subject, state in entries)
    moment = time.time() if now is None else now
    for (kind, subject), state in pairs:
        if kind == "until":
            if moment >= float(state):
                return False
        elif _jsonish(state_now(kind, subject)) != _jsonish(state):
            return False
    return True


def _jsonish(state: State) -> State:
    """A state as it reads back from JSON (tuples are lists)."""
    if isinstance(state, tuple | list):
        return [_jsonish(part) for part in state]
    return state


def as_list(recorder: Recorder) -> list[list[Any]]:
    """The recorded inputs as JSON keeps them: ``[kind, subject, state]`` each."""
    return [[kind, subject, state] for (kind, subject), state in recorder.entries.items()]
