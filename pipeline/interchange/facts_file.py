"""Declarative facts files: ``persona import FILE.yaml [--prune]``.

A facts file is a YAML list of facts (or a mapping with a ``facts:`` list)::

    facts:
      - topic: style
        content: Answers tersely.
        tier: permanent      # optional, default long_term
        confidence: 0.9      # optional, default 0.7

Each fact is identified by its topic and text, so importing the same file
twice changes nothing, and a changed tier or confidence updates the row.

``persona export`` (:mod:`.export`) writes the same format with each fact's ``id`` (and its ``key``,
``reinforcement_count``, ``confidence``, ``tier``, ``topic``): a fact with an id is matched by the
id, not by its text, so an edited text under the same id updates that fact, and nothing earned by
reinforcement is lost. An id the profile does not hold (another profile's, another database's)
is a new fact. A ``key`` names a slot (``package_manager``): a newer fact with the same key
supersedes the profile's older one (:mod:`pipeline.store.supersede`). A fact the import adds may update one of
the profile's other facts (one the file does not list): the report names it as a proposal
(:mod:`pipeline.store.proposals`), and nothing is superseded but by a key. The import itself is
:mod:`.importing`'s, the one engine every format (:mod:`.formats`) shares.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import YAMLError

from .. import inputs
from ..config.files import parse_yaml_text, read_yaml_text
from ..errors import ConfigError, FactsFileError
from ..fs.yaml import YamlTooComplex, check_yaml
from ..store import PersonaStore
from .export import export_facts  # noqa: F401  (its old path, pipeline.store.facts_file, had it)
from .fact_entry import MAX_IMPORT_BYTES, MAX_WRITER_CHARS, FactEntry, Offered, Parsed, Refusal, entry_problems
from .importing import ImportReport, Known, import_entries

__all__ = ["MAX_WRITER_CHARS", "FactEntry", "ImportReport", "Known", "import_facts", "parse_facts",
           "read_facts_file"]


def read_facts_file(path: Path) -> list[FactEntry]:
    """Parse and validate a facts file; every bad entry is reported, by index and line."""
    parsed = _parse_checked(_read(path), path)
    if parsed.bad:
        raise FactsFileError("; ".join(f"{path}: {bad.where}: {bad.why}" for bad in parsed.bad))
    return [item.fact for item in parsed.facts]


def parse_facts(text: str, path: Path) -> Parsed:
    """A facts file's text as the entries it offers (``fact #N``) and the bad ones (``fact #N (line L)``: what is
    wrong); a file that is not YAML, or past the nesting and alias limits, is a FactsFileError."""
    try:
        check_yaml(text)
    except YamlTooComplex as error:
        raise FactsFileError(f"{path}: {error}") from None
    return _parse_checked(text, path)


def _read(path: Path) -> str:
    """The file's text, bounded as every import's source is (the CLI's and the Python API's alike)."""
    try:
        size = Path(path).stat().st_size
    except OSError:
        size = 0  # read_yaml_text names what is wrong with the path
    if size > MAX_IMPORT_BYTES:
        raise FactsFileError(f"{path} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB, the most an import "
                             "reads; split it")
    try:
        return read_yaml_text(path)
    except ConfigError as error:  # unreadable, not UTF-8, or past the nesting and alias limits
        raise FactsFileError("; ".join(error.problems)) from None


def _parse_checked(text: str, path: Path) -> Parsed:
    """The fast C loader reads the file; only when something is wrong is it parsed again with the round-trip
    loader, which knows each entry's line."""
    try:
        document = YAML(typ="safe").load(text)
    except YAMLError:
        document = _parse_with_lines(text, path)  # raises the precise error, with file:line
    parsed = _validate(_items(path, document), lines=False)
    if parsed.bad:
        parsed = _validate(_items(path, _parse_with_lines(text, path)), lines=True)
    return parsed


def _parse_with_lines(text: str, path: Path) -> Any:
    try:
        return parse_yaml_text(text, path)
    except ConfigError as error:
        raise FactsFileError("; ".join(error.problems)) from None


def _items(path: Path, document: Any) -> list[Any]:
    if document is None:
        return []
    items = document.get("facts") if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise FactsFileError(f"{path}: expected a list of facts, or a mapping with a 'facts' list")
    return items


def _validate(items: list[Any], *, lines: bool) -> Parsed:
    parsed = Parsed()
    for index, item in enumerate(items):
        try:
            parsed.facts.append(Offered(f"fact #{index + 1}",
                                        FactEntry.model_validate(dict(item) if isinstance(item, dict) else item)))
        except ValidationError as error:
            where = _line(items, index) if lines else ""
            parsed.bad.append(Refusal(f"fact #{index + 1}{where}", entry_problems(error)))
    repeats = _duplicates(parsed.facts)
    parsed.bad += repeats.values()
    parsed.facts = [item for item in parsed.facts if item.where not in repeats]
    return parsed


def _line(items: Any, index: int) -> str:
    if isinstance(items, CommentedSeq) and items.lc.data and index < len(items.lc.data):
        return f" (line {items.lc.item(index)[0] + 1})"
    return ""


def _duplicates(offered: list[Offered]) -> dict[str, Refusal]:
    """Each entry that repeats an earlier one (its text, its id or its key), by where it stands."""
    repeats: dict[str, Refusal] = {}
    identities: tuple[tuple[str, Callable[[FactEntry], Hashable]], ...] = (
        ("", lambda e: None if e.id is not None else e.identity),
        ("the id of ", lambda e: e.id), ("the key of ", lambda e: None if e.key is None else (e.key, e.scope)))
    for what, identity in identities:
        seen: dict[Any, str] = {}
        for item in offered:
            value = identity(item.fact)
            if value is not None and value in seen:
                repeats.setdefault(item.where, Refusal(item.where, f"repeats {what}{seen[value]}"))
            seen.setdefault(value, item.where)
    return repeats


def import_facts(store: PersonaStore, path: Path, *, prune: bool = False, force: bool = False,
                 skip_bad: bool = False, dry_run: bool = False) -> ImportReport:
    """Bring the store in line with a facts file, in one transaction (:func:`~.importing.import_entries`)."""
    parsed = _parse_checked(_read(path), path)
    parsed.check_count(str(path), store.max_import_facts)
    return import_entries(store, parsed, origin=str(inputs.expanded(Path(path)).absolute()), prune=prune, force=force,
                          skip_bad=skip_bad, dry_run=dry_run)
