"""`persona forget` and `persona profile erase`: the store's erasure, then every rendered file without it.

The store removes every version of the fact and everything rendered from it
since its birth, and scrubs its pages (:mod:`pipeline.store.erasure`); then
every target of the profile is rendered again (a forced tick, under the
profile's lock), so no file, region or stored block keeps it. Last, each file
the profile's renders wrote since the fact's birth is read back and any that
still holds its text (one this render could not write, an earlier target's)
is named: a check of the outcome, never the way the erasure finds what to
remove. The kept `persona edit` files of the profile that hold the text go too
(:mod:`pipeline.fs.edit_files`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import caches
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, region_id, resolve_target
from ..errors import PersonaError
from ..fs import records
from ..fs.edit_files import remove_holding
from ..fs.read import read_file
from ..fs.regions import own_region
from ..fs.yaml import check_yaml
from ..render.sanitize import inline, xml
from ..store import PersonaStore, identity
from ..store.erasure import Erasure, erase_profile, forget_fact
from ..store.forgotten import fold
from ..store.runs import paths_written_since, trim_runs
from .history_journal import Recorder, scrub_after
from .host_histories import HostHistories
from .learn import users_own_files
from .tick import tick

log = logging.getLogger(__name__)
TAKES_EFFECT = "from the next request: a forgotten fact leaves every session's persona at once"


@dataclass
class Forgotten:
    """What a forget did: what the store erased, the targets rendered again, and any file that still holds it."""

    erasure: Erasure
    rendered: list[str] = field(default_factory=list)
    still_holding: list[str] = field(default_factory=list)
    in_users_text: list[str] = field(default_factory=list)  # of those, files holding it only in the user's own lines
    edit_files: list[str] = field(default_factory=list)  # kept `persona edit` files that held it, removed
    render_warnings: list[str] = field(default_factory=list)  # targets not rendered again, each with why
    host_histories: HostHistories = field(default_factory=HostHistories)  # the hosts' transcripts
    in_sources: list[str] = field(default_factory=list)  # files it was imported from that still hold it (never edited)

    def to_dict(self) -> dict[str, Any]:
        return {**self.erasure.to_dict(), "rendered": self.rendered, "still_holding": self.still_holding,
                "in_users_text": self.in_users_text, "edit_files": self.edit_files,
                "render_warnings": self.render_warnings, "host_histories": self.host_histories.to_dict(),
                "in_sources": self.in_sources, "takes_effect": TAKES_EFFECT}


@dataclass
class Settled:
    """What follows erasures: the targets rendered again (and a warning for each that was not), the files that
    still hold any of the texts, those of them holding it only in the user's own lines, and the kept edit files
    removed."""

    rendered: list[str]
    still_holding: list[str]
    in_users_text: list[str]
    edit_files: list[str]
    render_warnings: list[str]


def text_forms(text: str) -> set[str]:
    """How a fact's text reads in the shipped templates (as stored, inline, XML- and JSON-escaped): what the
    check after a forget looks for in files. The erasure itself finds what to remove by generation."""
    flat = inline(text)
    return {form for form in (text, flat, flat.removeprefix("\\"), xml(flat), json.dumps(flat)[1:-1]) if form}


def forget(settings: Settings, store: PersonaStore, persona_id: int | None = None, *,
           tombstone_id: int | None = None, keep_host_histories: bool = False) -> Forgotten:
    """Forget a fact of the store's profile everywhere: the version named (a current, superseded or demoted fact's
    id, or a tombstone's), every version sharing its text, and their chains, then its text in the hosts'
    histories (``keep_host_histories``: only named there), every version's, with any scrub an earlier forget left
    pending. NotFoundError for an id it lacks."""
    recorder = Recorder(store, keep=keep_host_histories)
    text, erasure = forget_fact(store, persona_id, tombstone_id=tombstone_id, journal=recorder)
    settled = settle(settings, store, [(text, erasure)])
    in_sources = sources_holding([*erasure.sources, *users_own_files()], [text], settings.injection.max_file_bytes,
                                 named=settled.still_holding)
    return Forgotten(erasure, settled.rendered, settled.still_holding, settled.in_users_text, settled.edit_files,
                     settled.render_warnings, scrub_after(store, recorder.texts, keep=keep_host_histories),
                     in_sources)


def sources_holding(sources: list[str], texts: list[str], max_bytes: int, *, named: list[str]) -> list[str]:
    """Of the files the forgotten facts were imported from, those that still hold one of ``texts``, but those
    already ``named``: persona-tier never edits a source, so the user must (its next import skips the text)."""
    holds = holding_any(texts)
    return [path for path in sources if path not in named
            and (data := _text(Path(path), max_bytes)) is not None and holds(data)]


def settle(settings: Settings, store: PersonaStore, erased: list[tuple[str, Erasure]], *,
           editing: Path | None = None) -> Settled:
    """After erasures committed (each the text named and what went): render every target of the profile again,
    once, and remove the profile's kept edit files that hold any of the texts (but ``editing``, the running
    edit's own). A target it cannot render is a warning: the erasure stands, and says so."""
    rendered, warnings = _rerender(settings, store)
    _forget_deliveries(store)
    since = min((erasure.since for _, erasure in erased), default=0)
    needles = set().union(*(text_forms(text) for text, _ in erased))
    held, users = _holding(settings, store, needles, paths_written_since(store, since))
    edit_files = remove_holding(store.profile, holding_any([text for text, _ in erased]), spare=editing)
    return Settled(rendered, held, users, [str(path) for path in edit_files], warnings)


def holding_any(texts: list[str]) -> Callable[[str], bool]:
    """A test of a kept edit file's text: does it hold any of ``texts``, folded as forgotten text is (in the raw
    text, so a plain scalar folded over lines is found, or in any string its YAML holds, quoted or escaped)?"""
    needles = [needle for needle in map(fold, texts) if needle]

    def holds(text: str) -> bool:
        return any(needle in fold(candidate) for candidate in (text, *_strings(text)) for needle in needles)
    return holds


def _strings(text: str) -> Iterator[str]:
    """Every string in a YAML text (keys and values), or none when it does not parse."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        check_yaml(text)
        stack = [YAML(typ="safe").load(text)]
    except (YAMLError, ValueError):
        return
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            stack += value


def erase(settings: Settings, store: PersonaStore, *, keep_host_histories: bool = False) -> Forgotten:
    """Erase everything the store's profile holds; its files are rendered again, empty of facts, and the run
    records of the renders before go too; the facts' texts leave the hosts' histories (``keep_host_histories``:
    are only named there)."""
    facts = store.list()
    recorder = Recorder(store, keep=keep_host_histories)
    done = Forgotten(erase_profile(store, journal=recorder))
    done.rendered, done.render_warnings = _rerender(settings, store)
    _forget_deliveries(store)
    done.erasure.runs += trim_runs(store)
    needles = set().union(*(text_forms(fact.content) for fact in facts)) if facts else set()
    done.still_holding, done.in_users_text = _holding(settings, store, needles, [])
    done.edit_files = [str(path) for path in remove_holding(store.profile, lambda text: True)]
    done.host_histories = scrub_after(store, recorder.texts, keep=keep_host_histories)
    return done


def _forget_deliveries(store: PersonaStore) -> int:
    """The profile's delivery records (:mod:`pipeline.fs.records`) hold its text as last delivered: they go, from
    every records folder the store lists and this home's, whatever spelling of the store's path made them; the
    store's new erasure stamp is left beside them, for a process of ours that cannot read the store just now."""
    with store.read() as conn:
        found, folders = identity.store_identity(conn), identity.record_folders(conn)
    if found is None:
        return 0
    every = [*folders, records.folder()]
    records.note_erasure(every, *found)
    return records.sweep(every, found[0], store.profile)


def _rerender(settings: Settings, store: PersonaStore) -> tuple[list[str], list[str]]:
    """Render every target of the profile again; the targets rendered, and a warning for each that was not (one
    the profile has no file in, or a render that failed: the erasure has committed either way)."""
    caches.clear_fact_text()  # every cache of this process that may hold a fact's text (pipeline/caches.py)
    try:
        result = tick(settings, store=store, force=True)
    except PersonaError as error:
        log.info("profile %s: the erasure is done, but its targets were not rendered again: %s", store.profile, error)
        return [], [f"no target was rendered again: {error}"]
    return [report.target for report in result.reports], result.skipped


def _holding(settings: Settings, store: PersonaStore, needles: set[str], written: list[Path]
             ) -> tuple[list[str], list[str]]:
    """The profile's target files, and files its renders wrote since the fact's birth, that still hold any of
    ``needles`` (a file this render could not write, or one no target writes any more); and those of them, among
    region targets, that hold it only outside our region (in the user's own lines)."""
    paths: dict[Path, ResolvedTarget | None] = {path: None for path in written}
    for name in settings.targets:
        try:
            target = resolve_target(settings, name, profile=store.profile)
        except PersonaError:  # a shared file target this profile has no file in
            continue
        if target.output != "store":
            paths[target.path] = target
    held, users = [], []
    for path, shown in paths.items():
        data = _text(path, settings.injection.max_file_bytes) if needles else None
        if data is None or not any(needle in data for needle in needles):
            continue
        held.append(str(path))
        if shown is not None and shown.output == "region" and not _in_region(shown, data, needles):
            users.append(str(path))
    if held:  # the caller says it to the user, with what to do; the log keeps it for hosts
        log.info("profile %s: after the forget, %d file(s) still hold the text: %s", store.profile, len(held),
                 ", ".join(held))
    return held, users


def _text(path: Path, max_bytes: int) -> str | None:
    try:
        return read_file(path, max_bytes).data.decode("utf-8", "replace")
    except OSError:
        return None


def _in_region(target: ResolvedTarget, text: str, needles: set[str]) -> bool:
    """Whether any of ``needles`` is inside our region of the file (else it is only in the user's own lines)."""
    data = text.encode("utf-8")
    try:
        span = own_region(data, region_id(target), str(target.path))
    except PersonaError:
        return True  # markers we cannot read: say the general reason
    if span is None:
        return False
    ours = data[span.start:span.stop].decode("utf-8", "replace")
    return any(needle in ours for needle in needles)
