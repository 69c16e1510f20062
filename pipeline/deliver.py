"""The delivery fast path: `persona inject` answered from its last delivery, with the standard library alone.

Each time the full path delivers (``persona inject``, the SessionStart hooks), it records what it printed and
the key that made it (:func:`record`): the request (the command's arguments, the working directory and the
environment that shapes settings), the package, the profile's change counter and newest run in the SQLite
store, and the state of every file the answer was read from or looked for (config files and the paths searched
for them, the Hermes home's own, templates, target files, the project's ``.git`` and its config). The next
call with the same request (:func:`answer`, the console script's first lines) recomputes the key with the
standard library only, and prints the recorded text when every part matches. Any difference, doubt or error
answers None: the full path runs, exactly as before. PostgreSQL stores and session snapshots are never recorded.
No clock is part of the key: the prompt path renders only on a change (``schedule.tick.render_due``), and the
time-driven work (decay, expiry, the daily render) is ``persona tick``'s, which moves the counter or the newest run.

Two files per delivery: a pointer under the Hermes home's state directory, named by the request's digest,
holding only where the snapshot is; and the snapshot beside the store (``<db>.persona-delivered/``), one folder
per profile, holding the text: a forget removes the profile's folder (:func:`forget`). Both are 0600, written
atomically. This module imports nothing of the package, and nothing heavy of the standard library.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    Environ = Mapping[str, str]

FORMAT = 1
# The environment that shapes what inject prints: the settings' own variables, and where homes, projects and
# locales are found. A variable outside these (a host's session id) changes nothing, so it may vary.
# (A host tells its hook the project's directory in a variable ending in _PROJECT_DIR.)
ENV_PREFIXES = ("PERSONA_", "MNEMOSYNE_", "HERMES_", "DYNACONF_", "LC_", "PYTHON")
ENV_SUFFIXES = ("_PROJECT_DIR",)
ENV_NAMES = ("HOME", "LANG", "XDG_CONFIG_HOME")
MAX_SNAPSHOT_BYTES = 4 << 20
# Records kept per folder (a profile's snapshots, the pointers, the status settings): one is made per request,
# working directory and environment, so a user's many checkouts would pile them up without a bound. The oldest
# go first; a pruned record only sends its request to the full path once.
KEEP_RECORDS = 256
MISSING, DIRECTORY, OTHER = "-", "d", "not a file: "
# The arguments the console script (``pipeline.__main__``) was started with, once it falls to the full path:
# what a delivery's record is keyed by. None in any other process (a test's CliRunner): nothing is recorded there.
REQUEST: list[str] | None = None


def request_digest(argv: list[str], cwd: str, environ: Environ) -> str:
    """The digest naming one request: its arguments, working directory and the environment that shapes it."""
    import hashlib

    env = sorted((name, value) for name, value in environ.items()
                 if name.startswith(ENV_PREFIXES) or name.endswith(ENV_SUFFIXES) or name in ENV_NAMES)
    text = json.dumps([FORMAT, argv, cwd, env], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def hermes_home(environ: Environ) -> str:
    """The Hermes home, as ``pipeline.fs.locations.hermes_home`` resolves it outside a host (a test keeps them
    equal): ``$HERMES_HOME``, else the sticky profile under ``~/.hermes``, else ``~/.hermes``."""
    if environ.get("HERMES_HOME"):
        return os.path.expanduser(environ["HERMES_HOME"])
    root = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".hermes")
    try:
        with open(os.path.join(root, "active_profile"), encoding="utf-8") as file:
            name = file.read().strip().lower()
    except (OSError, UnicodeDecodeError):
        return root
    if not name or name == "default" or not _profile_name(name):
        return root
    profile = os.path.join(root, "profiles", name)
    return profile if os.path.isdir(profile) else root


def _profile_name(name: str) -> bool:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789_-")
    return name[0] in allowed - {"_", "-"} and set(name) <= allowed


def home_inputs(environ: Environ) -> list[str]:
    """The files the Hermes home's resolution looks at (the sticky profile), for a key."""
    if environ.get("HERMES_HOME"):
        return []
    root = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".hermes")
    return [os.path.join(root, "active_profile")]


def pointer_path(digest: str, environ: Environ) -> str:
    return os.path.join(hermes_home(environ), "mnemosyne", "persona-tier", "delivered", digest)


def snapshot_folder(db: str, profile: str) -> str:
    """Where ``profile``'s delivery snapshots of the store ``db`` live: beside it, one folder per profile."""
    import hashlib

    name = hashlib.sha256(profile.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return os.path.join(db + ".persona-delivered", name)


def state_of(path: str) -> str:
    """A path's state for a key: missing, a directory, the SHA-256 of a file's bytes, or (a FIFO, a device:
    opened without blocking and never read) its kind."""
    import hashlib
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return MISSING
    except IsADirectoryError:
        return DIRECTORY
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            return DIRECTORY
        if not stat.S_ISREG(mode):
            return OTHER + stat.filemode(mode)[0]
        return hashlib.sha256(_read_all(descriptor, MAX_SNAPSHOT_BYTES + 1)).hexdigest()
    finally:
        os.close(descriptor)


def _read_all(descriptor: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0:
        chunk = os.read(descriptor, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def states(paths: list[str]) -> dict[str, str]:
    return {path: state_of(path) for path in paths}


def package_stamp() -> str:
    """This installation, by its files: the package folder and this module (an upgrade rewrites both)."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = []
    for path in (here, __file__, os.path.join(here, "__init__.py")):
        info = os.stat(path)
        parts.append(f"{info.st_mtime_ns}:{info.st_size}:{info.st_ino}")
    return " ".join(parts)


def counters(db: str, profile: str) -> tuple[int, int] | None:
    """The profile's change counter and newest run id, from the SQLite file opened read-only; None when the
    file or its tables are not there."""
    import sqlite3
    from urllib.parse import quote

    if not os.path.isfile(db):
        return None
    conn = sqlite3.connect(f"file:{quote(os.path.abspath(db))}?mode=ro", uri=True, timeout=0.05)
    try:
        state = conn.execute("SELECT generation FROM persona_state WHERE session_id = ?", (profile,)).fetchone()
        run = conn.execute("SELECT max(id) FROM persona_runs WHERE session_id = ?", (profile,)).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return (0 if state is None else int(state[0]), int(run[0] or 0))


def project_inputs(directory: str) -> list[str]:
    """Every path the project identity of ``directory`` depends on: each ``.git`` looked for on the way up, and
    the found checkout's ``.git`` file, ``commondir`` and config files (``pipeline.fs.projects``)."""
    start = os.path.realpath(os.path.expanduser(directory))
    paths, candidate = [], start
    while True:
        dot_git = os.path.join(candidate, ".git")
        paths.append(dot_git)
        if os.path.lexists(dot_git):
            return paths + _git_files(candidate, dot_git)
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return paths
        candidate = parent


def _git_files(top: str, dot_git: str) -> list[str]:
    git_dir = dot_git
    pointer = _small_text(dot_git)
    if pointer is not None and pointer.startswith("gitdir:"):
        git_dir = os.path.realpath(os.path.join(top, pointer.removeprefix("gitdir:").strip()))
    found = [os.path.join(git_dir, "commondir"), os.path.join(git_dir, "config")]
    common = _small_text(found[0])
    if common is not None:
        found.append(os.path.join(os.path.realpath(os.path.join(git_dir, common)), "config"))
    return found


def _small_text(path: str) -> str | None:
    """A small regular file's text, stripped; None for anything else (opened without blocking: a FIFO where a
    checkout's ``.git`` file or ``commondir`` should be is never waited on, and its kind is in the key)."""
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        return _read_all(descriptor, 4096).decode("utf-8", "replace").strip()
    finally:
        os.close(descriptor)


def _private_folder(folder: str) -> None:
    """``folder`` and any folder above it that is missing, each 0700."""
    if os.path.isdir(folder):
        return
    _private_folder(os.path.dirname(folder))
    os.makedirs(folder, 0o700, exist_ok=True)  # its parent is there now: only this folder is made, 0700


def keep_latest(folder: str, limit: int | None = None) -> None:
    """Remove the oldest files of ``folder`` (by modification time) beyond the latest ``limit``
    (:data:`KEEP_RECORDS`)."""
    from contextlib import suppress  # a record's work, never the fast path's

    limit = KEEP_RECORDS if limit is None else limit
    try:
        entries = [entry for entry in os.scandir(folder) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return
    if len(entries) <= limit:
        return
    with suppress(FileNotFoundError):  # another process pruned at the same time: its choice stands
        entries.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
        for entry in entries[limit:]:
            with suppress(FileNotFoundError):
                os.unlink(entry.path)


def write_private(path: str, data: bytes) -> None:
    """``data`` at ``path``, 0600, whole or not at all (a temporary file beside it, then a rename)."""
    _private_folder(os.path.dirname(path))
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def record(request: tuple[list[str], str, Environ], *, db: str, profile: str,
           seen: tuple[int, int], inputs: dict[str, str], output: str) -> None:
    """Record what a full delivery printed and its key. ``seen`` is the counters read before it ran and
    ``inputs`` the states of its paths taken then; nothing is recorded when either moved meanwhile."""
    argv, cwd, environ = request
    if counters(db, profile) != seen or states(list(inputs)) != inputs:
        return  # a write or a render landed while it ran: the next delivery records
    digest = request_digest(argv, cwd, environ)
    folder = snapshot_folder(db, profile)
    snapshot = os.path.join(folder, digest + ".json")
    document = {"format": FORMAT, "request": digest, "package": package_stamp(), "db": db, "profile": profile,
                "counters": list(seen), "inputs": inputs, "output": output}
    write_private(snapshot, json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogateescape"))
    pointer = pointer_path(digest, environ)
    write_private(pointer, json.dumps({"snapshot": snapshot}).encode("utf-8"))
    keep_latest(folder)
    keep_latest(os.path.dirname(pointer))


def lookup(argv: list[str], cwd: str, environ: Environ) -> str | None:
    """What the last full delivery of this request printed, when every part of its key still matches; else
    None."""
    digest = request_digest(argv, cwd, environ)
    try:
        with open(pointer_path(digest, environ), "rb") as file:
            snapshot = json.loads(file.read(4096))["snapshot"]
        with open(snapshot, "rb") as file:
            document = json.loads(file.read(MAX_SNAPSHOT_BYTES).decode("utf-8", "surrogateescape"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("request") != digest:
        return None
    if document.get("package") != package_stamp():
        return None
    seen = counters(document["db"], document["profile"])
    if seen is None or list(seen) != document["counters"] or states(list(document["inputs"])) != document["inputs"]:
        return None
    output = document["output"]
    return output if isinstance(output, str) else None


def forget(db: str, profile: str) -> int:
    """Remove every delivery snapshot of ``profile`` in the store ``db`` (a forget, an erasure); how many went.
    The pointers left behind name files that are gone, and hold no text."""
    folder = snapshot_folder(db, profile)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return 0
    for name in names:
        os.unlink(os.path.join(folder, name))
    return len(names)


def answer(argv: list[str]) -> bool:
    """Print the recorded delivery for ``argv`` (the arguments after the program's name) and say True; False
    (nothing printed) when the full path must run. Only ``inject`` is ever answered here."""
    if "inject" not in argv or "--debug" in argv or "--help" in argv:
        return False
    try:
        output = lookup(argv, os.getcwd(), os.environ)
    except Exception:  # any doubt: the full path answers, exactly as it would have
        return False
    if output is None:
        return False
    sys.stdout.write(output)  # once begun, the answer is this one: a broken pipe is the host's, as before
    sys.stdout.flush()
    return True


if __name__ == "__main__":  # `python -m pipeline.deliver inject ...`: the recorded answer, or exit status 1
    sys.exit(0 if answer(sys.argv[1:]) else 1)
