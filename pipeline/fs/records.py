"""Records on disk: what one run leaves for a later one, in one home, by one rule each for the key, the writer,
pruning and the sweep.

A *record* is a copy on disk (a *cache* is in memory: :mod:`pipeline.caches`). Every record lives under the
records folder of a Hermes home's state (``<home>/mnemosyne/persona-tier/records``):

- ``deliveries/<store id>/<profile>/<request>.json``: a replayable command's answer (``persona inject``, ``persona
  status``, a host's first block) with the inputs its full run read (:mod:`pipeline.inputs`). It holds fact text,
  so it is filed under the store's identity (:mod:`pipeline.store.identity`), whatever spelling of the database's
  path made it, and :func:`sweep` (run by every forget and profile erasure) removes a profile's;
- ``pointers/<request>.json``: which delivery records answer a request (no text);
- ``hooks/<file>.json``: a host settings file as it was before ``persona hooks install`` changed it;
- ``renders/<store id>/<file>.json``: the digests of the last texts the store's renders wrote into a file (no
  text), so a store restored from a backup still knows its own renders from a file someone else wrote;
- ``erasures/<store id>.json``: the store's erasure stamp as the last forget left it (no text), so a process of
  ours that cannot read the store at that moment still learns that a forget happened and drops what it kept.

A store lists every records folder that holds its deliveries (``persona_record_homes``), so a forget sweeps
them all, in any Hermes home. Every record is 0600 in 0700 folders, written whole or not at all, read only when it
is a regular file of this user's, private to them. This module uses the standard library alone: the fast path
reads records before anything heavy is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

from .home import state_folder

FORMAT = 2
KEEP = 256  # records kept per folder; the oldest (by modification time) go first
MAX_RECORD_BYTES = 4 << 20
CANDIDATES = 4  # delivery records a pointer names (the newest first): a request run under a few environments


def key(*parts: Any) -> str:
    """The one way a record's name is made: the SHA-256 of its parts as JSON."""
    text = json.dumps([FORMAT, *parts], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def folder(home: str | None = None) -> str:
    """The records folder of ``home`` (default: the current Hermes home)."""
    return os.path.join(state_folder(home), "records")


def profile_folder(records: str, store_id: str, profile: str) -> str:
    return os.path.join(records, "deliveries", store_id, key("profile", profile)[:32])


def delivery_path(records: str, store_id: str, profile: str, request: str) -> str:
    return os.path.join(profile_folder(records, store_id, profile), request + ".json")


def pointer_path(records: str, request: str) -> str:
    return os.path.join(records, "pointers", request + ".json")


def hook_path(settings_file: str, home: str | None = None) -> str:
    """Where a host settings file's bytes from before our hook was installed are kept (by its real path)."""
    return os.path.join(folder(home), "hooks", key("hook", os.path.realpath(settings_file))[:32] + ".json")


# --- reading and writing ---------------------------------------------------------------------------------------

def read(path: str, limit: int = MAX_RECORD_BYTES) -> dict[str, Any] | None:
    """The record at ``path``: a regular file of this user's, private to them, of this format; None otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.geteuid():
            return None
        data = _read_all(descriptor, limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        return None
    try:
        document = json.loads(data.decode("utf-8", "surrogateescape"))
    except ValueError:
        return None
    return document if isinstance(document, dict) and document.get("format") == FORMAT else None


def _read_all(descriptor: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(descriptor, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write(path: str, document: dict[str, Any]) -> None:
    """``document`` (with this format) at ``path``, 0600 in 0700 folders, whole or not at all; then the folder is
    pruned to the newest :data:`KEEP` records."""
    data = json.dumps({"format": FORMAT, **document}, ensure_ascii=False).encode("utf-8", "surrogateescape")
    private_folder(os.path.dirname(path))
    temporary = f"{path}.{os.getpid()}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    prune(os.path.dirname(path))


def private_folder(path: str) -> None:
    """``path`` and any folder above it that is missing, each 0700."""
    if os.path.isdir(path):
        return
    private_folder(os.path.dirname(path))
    os.makedirs(path, 0o700, exist_ok=True)  # its parent is there now: only this folder is made, 0700


def prune(path: str, keep: int | None = None) -> None:
    """Remove the oldest records of the folder ``path`` beyond the newest ``keep`` (default :data:`KEEP`): a pruned
    record only sends its request to the full path once."""
    from contextlib import suppress

    keep = KEEP if keep is None else keep
    try:
        entries = [entry for entry in os.scandir(path) if entry.is_file(follow_symlinks=False)]
    except OSError:
        return
    if len(entries) <= keep:
        return
    with suppress(FileNotFoundError):  # another process pruned at the same time: its choice stands
        entries.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
        for entry in entries[keep:]:
            with suppress(FileNotFoundError):
                os.unlink(entry.path)


def remove(path: str) -> bool:
    """Remove one record; whether it was there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


# --- renders ---------------------------------------------------------------------------------------------------

RENDERS_KEPT = 16


def render_path(records: str, store_id: str, path: str) -> str:
    return os.path.join(records, "renders", store_id, key("render", os.path.realpath(path))[:32] + ".json")


def note_render(records: str, store_id: str, path: str, sha256: str) -> None:
    """Remember that a render of the store wrote the text with digest ``sha256`` into ``path``."""
    where = render_path(records, store_id, path)
    known = rendered_digests(where)
    write(where, {"path": os.path.realpath(path), "sha256": [sha256, *(d for d in known if d != sha256)][
        :RENDERS_KEPT]})


def rendered_digests(where: str) -> list[str]:
    found = read(where, 1 << 16)
    digests = found.get("sha256") if found is not None else None
    return [d for d in digests if isinstance(d, str)] if isinstance(digests, list) else []


def rendered(records: str, store_id: str, path: str, sha256: str) -> bool:
    """Whether a render of the store (in any history of it) wrote exactly this text into ``path``."""
    return sha256 in rendered_digests(render_path(records, store_id, path))


# --- deliveries ------------------------------------------------------------------------------------------------

def candidates(records: str, request: str) -> list[str]:
    """The delivery records that may answer ``request``, newest first."""
    pointer = read(pointer_path(records, request), 1 << 16)
    found = pointer.get("deliveries") if pointer is not None else None
    return [path for path in found if isinstance(path, str)] if isinstance(found, list) else []


def keep_delivery(records: str, request: str, store_id: str, profile: str, document: dict[str, Any]) -> str:
    """Write a delivery record and point ``request`` at it first; its path."""
    path = delivery_path(records, store_id, profile, key(request, document.get("inputs")))
    write(path, {**document, "request": request, "store": store_id, "profile": profile})
    others = [found for found in candidates(records, request) if found != path]
    write(pointer_path(records, request), {"deliveries": [path, *others][:CANDIDATES]})
    return path


def sweep(records_folders: list[str], store_id: str, profile: str | None) -> int:
    """Remove every delivery record of ``profile`` (None: every profile) of the store ``store_id`` from each
    records folder; how many went."""
    gone = 0
    for records in dict.fromkeys(records_folders):
        base = os.path.join(records, "deliveries", store_id)
        targets = [profile_folder(records, store_id, profile)] if profile is not None else _folders(base)
        for target in targets:
            gone += _empty(target)
    return gone


def _folders(base: str) -> list[str]:
    try:
        return [entry.path for entry in os.scandir(base) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _empty(target: str) -> int:
    try:
        names = os.listdir(target)
    except OSError:
        return 0
    return sum(remove(os.path.join(target, name)) for name in names)


# --- erasures --------------------------------------------------------------------------------------------------

def erasure_path(records: str, store_id: str) -> str:
    return os.path.join(records, "erasures", key("erasure", store_id)[:32] + ".json")


def note_erasure(records_folders: list[str], store_id: str, stamp: str) -> None:
    """Leave the store's new erasure stamp in each records folder (a forget's last step); a folder that cannot be
    written is skipped: the stamp in the store is the one source, this is its copy for a store that is away."""
    for records in dict.fromkeys(records_folders):
        try:
            write(erasure_path(records, store_id), {"store": store_id, "stamp": stamp})
        except OSError:
            continue


def erasure_noted(records: str, store_id: str) -> str | None:
    """The erasure stamp the last forget of ``store_id`` left in ``records``; None when there is none."""
    found = read(erasure_path(records, store_id))
    stamp = None if found is None else found.get("stamp")
    return stamp if isinstance(stamp, str) else None
