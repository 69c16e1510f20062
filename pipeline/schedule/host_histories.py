"""After a forget: the text out of the histories the hosts keep (their transcripts), which a resumed session sends.

Where each host keeps them is data in its module (:class:`~pipeline.hosts.model.History`); the homes come from
the environment as the hosts read it (``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``GEMINI_CLI_HOME``,
``HERMES_HOME``). JSON and JSON Lines files are rewritten by :mod:`pipeline.fs.json_scrub`; a host's database
is only read, and named when it holds the text.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import inputs
from ..fs.json_scrub import Needles, holds, open_files, scrub_file
from ..hosts.model import History
from ..hosts.registry import HOSTS
from ..render.sanitize import inline

log = logging.getLogger(__name__)
MAX_BYTES = 100_000_000  # a transcript past this is named, not read whole


@dataclass
class HostHistories:
    """What the scrub did: the files changed (or, kept, those that hold the text), and those it left, why."""

    kept: bool = False  # --keep-host-histories: nothing changed, ``files`` only hold the text
    files: list[dict[str, Any]] = field(default_factory=list)  # host, path, replaced
    left: list[dict[str, str]] = field(default_factory=list)  # host, path, reason

    def to_dict(self) -> dict[str, Any]:
        return {"kept": self.kept, "files": self.files, "left": self.left}


def history_folder(history: History, environ: dict[str, str] | None = None) -> Path:
    """The folder a host keeps its history in, resolved as the host resolves it."""
    def read(name: str) -> str | None:
        return inputs.environ(name) if environ is None else environ.get(name)

    if history.folder_env and (folder := read(history.folder_env)):
        return inputs.expanded(Path(folder))
    home = inputs.expanded(Path(found)) if history.home_env and (found := read(history.home_env)) else None
    return (home or Path(inputs.home())) / history.folder


def forms(texts: Iterable[str]) -> list[str]:
    """How each text may stand in a transcript: as stored, as rendered inline, and JSON-escaped once (a tool
    call's arguments are JSON inside a JSON string)."""
    found: set[str] = set()
    for text in texts:
        flat = inline(text)
        found |= {text, flat, *(json.dumps(form, ensure_ascii=a)[1:-1] for form in (text, flat) for a in (False, True))}
    return [form for form in found if form.strip()]


def scrub_histories(texts: Iterable[str], *, keep: bool = False, max_bytes: int = MAX_BYTES) -> HostHistories:
    """Replace ``texts`` in every host's history files with the marker (``keep``: only find them), and name
    each file it could not change safely, and each host database that holds them."""
    needles = Needles(forms(texts))
    done = HostHistories(kept=keep)
    if not needles.forms:
        return done
    held = None if keep else functools.cache(open_files)  # read from /proc once, and only if a file is to change
    for host, history in _histories():
        folder = history_folder(history)
        for path in _matching(folder, history.files):
            outcome = scrub_file(path, needles, max_bytes=max_bytes, dry_run=keep, held=held)
            if outcome is None:
                continue
            if outcome.reason:
                done.left.append({"host": host, "path": str(path), "reason": outcome.reason})
            else:
                done.files.append({"host": host, "path": str(path), "replaced": outcome.replaced})
        for path in _matching(folder, history.stores):
            if holds(path, needles):
                done.left.append({"host": host, "path": str(path), "reason": history.store_reason})
    if done.files or done.left:  # paths only: the text itself never reaches the log
        log.info("host histories: %d file(s) %s, %d left", len(done.files), "hold the text" if keep else "scrubbed",
                 len(done.left))
    return done


def _histories() -> Iterator[tuple[str, History]]:
    for host in HOSTS.values():
        if host.history is not None:
            yield host.display, host.history


def _matching(folder: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The regular files under ``folder`` that match ``patterns`` (symbolic links too: the scrub names them)."""
    if not folder.is_dir():
        return []
    found = {path for pattern in patterns for path in folder.glob(pattern)}
    return sorted(path for path in found if path.is_symlink() or path.is_file())
