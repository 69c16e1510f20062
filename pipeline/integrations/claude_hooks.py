"""Claude Code's SessionStart hook in its settings.json: installed and removed, every other byte kept.

Install adds one entry to ``hooks.SessionStart`` (creating the keys it needs) after whatever the user has,
in the file's own layout, and keeps the file as it was before in persona-tier's state directory. Remove gives
those bytes back when the file is still what install wrote; after other edits it takes out exactly our entry
and the separator install put before it. The file is locked, written atomically, and an invalid one is
refused whole, untouched.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fs import bounded_json, json_spans, records
from ..fs.json_spans import Node
from ..fs.locations import state_dir
from ..fs.lock import file_lock, lock_path
from ..fs.read import read_regular_bytes, real_path
from ..fs.write import PRIVATE_FILE, atomic_write_bytes
from ..hosts.claude_code import HOOK  # the hook's shape, as Claude Code's module declares it

EVENT = HOOK.event
MATCHER = HOOK.matcher
SUBCOMMAND = f"inject --format {HOOK.format}"
LOCK_TIMEOUT_S = 30.0


def settings_file(*, user: bool, project: Path | None, home: Path) -> Path:
    """Claude Code's settings.json: the user's (``~/.claude``) or the project's (``DIR/.claude``)."""
    return (home if user else (project or Path.cwd()).resolve()) / HOOK.settings_dir / HOOK.settings_name


def hook_command() -> str:
    """The hook's command: this installation's ``persona`` executable by its absolute path."""
    beside = Path(sys.executable).parent / "persona"
    import shutil

    found = str(beside) if beside.is_file() else shutil.which("persona")
    if found is None:
        raise InputError("cannot find the persona executable (not beside this Python, not on PATH); run "
                         "`make path` or install persona-tier first")
    return f"{shlex.quote(str(Path(found).absolute()))} {SUBCOMMAND}"


def entry(command: str) -> dict[str, Any]:
    return {"matcher": MATCHER, "hooks": [{"type": "command", "command": command}]}


def runs_ours(path: Path) -> bool:
    """Whether ``path``'s SessionStart hooks run ours (False when it is missing); an InputError naming the file
    when it cannot be read, as install and remove refuse it."""
    data = _read(path)
    return data is not None and _ours_in(bounded_json.loads(_text(path, data)))


def install(path: Path, command: str) -> bool:
    """Add our hook to ``path`` (created if missing); False if one of ours is already there."""
    path = real_path(path) if path.is_symlink() else path
    with file_lock(lock_path(path), LOCK_TIMEOUT_S):
        data = _read(path)
        text = _text(path, data) if data is not None else "{}\n"
        if _ours_in(bounded_json.loads(text)):
            return False
        new = _with_hook(text, entry(command), path).encode("utf-8")
        _keep(path, data, new)
        atomic_write_bytes(path, new, mode=_mode(path))
    return True


def remove(path: Path) -> bool:
    """Take our hook out of ``path``: its bytes from before install when nothing else changed; False if none."""
    path = real_path(path) if path.is_symlink() else path
    with file_lock(lock_path(path), LOCK_TIMEOUT_S):
        data = _read(path)
        kept = _kept(path)
        if data is not None and kept is not None and kept["written"] == _digest(data):
            _restore(path, kept)
            return True
        if data is None or not _ours_in(bounded_json.loads(_text(path, data))):
            return False
        atomic_write_bytes(path, _without_hook(_text(path, data)).encode("utf-8"), mode=_mode(path))
        _forget(path)
    return True


def _read(path: Path) -> bytes | None:
    try:
        return read_regular_bytes(path, confine_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


def _text(path: Path, data: bytes) -> str:
    """The file's JSON text; an InputError naming the line and column when it is not valid JSON (nothing is
    written then)."""
    try:
        text = data.decode("utf-8")
        value = bounded_json.loads(text)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; fix it, then run this again (nothing was changed)") from None
    except bounded_json.JsonTooDeep as error:
        raise InputError(f"{path}, line {error.lineno} column {error.colno}: {error.msg}; fix it, then run this "
                         "again (nothing was changed)") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}, line {error.lineno} column {error.colno}: not valid JSON ({error.msg}); fix it, "
                         "then run this again (nothing was changed)") from None
    if not isinstance(value, dict):
        raise InputError(f"{path} holds a JSON {type(value).__name__}, not an object; nothing was changed")
    return text


def _hooks(settings: dict[str, Any]) -> list[Any]:
    hooks = settings.get("hooks")
    found = hooks.get(EVENT) if isinstance(hooks, dict) else None
    return found if isinstance(found, list) else []


def _is_ours(item: Any) -> bool:
    commands = item.get("hooks") if isinstance(item, dict) else None
    return isinstance(commands, list) and any(
        isinstance(c, dict) and str(c.get("command", "")).endswith(SUBCOMMAND) for c in commands)


def _ours_in(settings: dict[str, Any]) -> bool:
    return any(_is_ours(item) for item in _hooks(settings))


def _with_hook(text: str, value: dict[str, Any], path: Path) -> str:
    """``text`` with ``value`` last in hooks.SessionStart, creating what is missing (as a whole, in one place)."""
    root = json_spans.parse(text)
    hooks = root.member("hooks")
    if hooks is None:
        return json_spans.add(text, root, {EVENT: [value]}, key="hooks", depth=1)
    _kind(text, hooks, "{", f"{path}: `hooks` is not an object")
    event = hooks.member(EVENT)
    if event is None:
        return json_spans.add(text, hooks, [value], key=EVENT, depth=2)
    _kind(text, event, "[", f"{path}: `hooks.{EVENT}` is not a list")
    return json_spans.add(text, event, value, key=None, depth=3)


def _kind(text: str, node: Node, opening: str, problem: str) -> None:
    if text[node.start] != opening:
        raise InputError(f"{problem}, as Claude Code expects; fix it, then run this again (nothing was changed)")


def _without_hook(text: str) -> str:
    """``text`` without our entry; a SessionStart list or hooks object left empty by that goes with it."""
    root = json_spans.parse(text)
    hooks = root.member("hooks")
    assert hooks is not None
    event = hooks.member(EVENT)
    assert event is not None
    ours = next(item for item in event.items if _is_ours(bounded_json.loads(text[item.start:item.end])))
    parent, child = _outermost_alone(root, hooks, event, ours)
    return json_spans.remove(text, parent, child)


def _outermost_alone(root: Node, hooks: Node, event: Node, ours: Node) -> tuple[Node, Node]:
    """What to take out: our entry, or the list or object it alone fills (as install added it)."""
    if len(event.items) > 1:
        return event, ours
    if len(hooks.members) > 1:
        return hooks, event
    return root, hooks


# -- the file as it was before install, a record of ours (pipeline/fs/records.py) -----------------------------


def _legacy_record(path: Path) -> Path:
    """Where releases before the records folder kept it (still read, and removed with the record)."""
    return state_dir() / "hooks" / f"{hashlib.sha256(os.fsencode(os.path.realpath(path))).hexdigest()[:32]}.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _keep(path: Path, before: bytes | None, written: bytes) -> None:
    original = None if before is None else base64.b64encode(before).decode("ascii")
    records.write(records.hook_path(str(path)), {"path": str(path), "original": original,
                                                  "written": _digest(written)})


def _kept(path: Path) -> dict[str, Any] | None:
    found = records.read(records.hook_path(str(path)))
    if found is not None:
        return found
    try:
        return dict(bounded_json.loads(_legacy_record(path).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def _restore(path: Path, kept: dict[str, Any]) -> None:
    if kept["original"] is None:
        path.unlink()
    else:
        atomic_write_bytes(path, base64.b64decode(kept["original"]), mode=_mode(path))
    _forget(path)


def _forget(path: Path) -> None:
    records.remove(records.hook_path(str(path)))
    with suppress(FileNotFoundError):
        _legacy_record(path).unlink()


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return PRIVATE_FILE
