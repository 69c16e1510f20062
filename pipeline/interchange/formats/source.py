"""Reading a source for an import, within bounds, and importing it: ``persona import --from FORMAT PATH``."""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from ... import inputs
from ...clock import to_db
from ...errors import FactsFileError
from ...fs.read import describe, read_file
from ...store import PersonaStore, topic_for
from ...text import normal_form
from ..fact_entry import MAX_IMPORT_BYTES, Offered, Parsed
from ..importing import ImportReport, import_entries
from .assistant import is_answer
from .registry import DEFAULT_TOPIC, Source, get_format

STDIN = "-"
STDIN_NAME = "<stdin>"


def read_source(path: Path | str, fmt: str | None = "facts", *, topic: str | None = None,
                accept_notes: bool = False, max_facts: int | None = None) -> tuple[str, Parsed]:
    """The source's name (an absolute path, or ``<stdin>`` for ``-``) and what format ``fmt`` reads in it (None:
    :func:`sniffed`).

    Repeats of a fact within the source are dropped (a facts file refuses them instead); with ``accept_notes``,
    notes offered for review (Hermes' ``MEMORY.md``) are taken in as facts. A source holding more than
    ``max_facts`` entries is a FactsFileError with its count.
    """
    name, _, parsed = _read(path, fmt, topic=topic, accept_notes=accept_notes, max_facts=max_facts)
    return name, parsed


def sniffed(text: str) -> str:
    """The format of a source no ``--from`` names: an old assistant's answer to ``persona import --prompt`` when
    it carries its mark, else a facts file."""
    return "assistant" if is_answer(text) else "facts"


def _read(path: Path | str, fmt: str | None, *, topic: str | None, accept_notes: bool,
          max_facts: int | None) -> tuple[str, str, Parsed]:
    name = STDIN_NAME if str(path) == STDIN else str(inputs.expanded(Path(path)).absolute())
    text = _text(path, name)
    fmt = fmt or sniffed(text)
    parser = get_format(fmt)
    parsed = parser.parse(Source(text, name, topic or DEFAULT_TOPIC, max_facts))
    parsed.check_count(name, max_facts)
    if accept_notes:
        parsed = replace(parsed, facts=[*parsed.facts, *parsed.notes], notes=[])
    facts = parsed.facts if topic else [_topic_from_content(item) for item in parsed.facts]
    if not parser.declarative and name != STDIN_NAME:  # a file's facts date from when it was last written (#50)
        facts = _dated(facts, Path(name))
    return name, fmt, replace(parsed, facts=_first_of_each(facts, by_text=not parser.declarative))


def _dated(facts: list[Offered], path: Path) -> list[Offered]:
    """Each fact the source gives no date of its own (mem0 does) dated by the file's modification time, so an old
    file imported after newer facts were stored updates none of them (a facts file says its facts are current)."""
    try:
        written = to_db(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    except OSError:
        return facts
    return [item if item.dated else replace(item, dated=written) for item in facts]


def _topic_from_content(item: Offered) -> Offered:
    """A fact the source filed under no heading (the default topic) gets the topic its content reads as (a name:
    identity, a place: location, an editor: tools...), so a Hermes USER.md is not all ``general`` (#50)."""
    if item.fact.topic != DEFAULT_TOPIC or (found := topic_for(item.fact.content)) is None:
        return item
    return replace(item, fact=item.fact.model_copy(update={"topic": found}))


def import_source(store: PersonaStore, path: Path | str, fmt: str | None = "facts", *, topic: str | None = None,
                  writer: str | None = None, prune: bool = False, force: bool = False, skip_bad: bool = False,
                  dry_run: bool = False, accept_notes: bool = False, scope: str | None = None) -> ImportReport:
    """Import the facts a source holds, in format ``fmt`` (None: :func:`sniffed`; see :func:`read_source` and
    :func:`~..importing.import_entries`); ``path`` may be ``-`` for standard input. ``scope`` (stored form:
    ``project:ID``, ``host:NAME``) is given to every entry that names none itself: a project's instruction file
    holds that project's rules."""
    origin, fmt, parsed = _read(path, fmt, topic=topic, accept_notes=accept_notes, max_facts=store.max_import_facts)
    if scope is not None:
        parsed.facts = [item if item.fact.scope is not None else
                        replace(item, fact=item.fact.model_copy(update={"scope": scope})) for item in parsed.facts]
    return import_entries(store, parsed, origin=origin, fmt=fmt, writer=writer, prune=prune, force=force,
                          skip_bad=skip_bad, dry_run=dry_run, declarative=get_format(fmt).declarative)


def _text(path: Path | str, name: str) -> str:
    """The source's text: at most :data:`MAX_IMPORT_BYTES`, UTF-8 (a byte-order mark dropped), line ends as LF."""
    if str(path) == STDIN:
        data = sys.stdin.buffer.read(MAX_IMPORT_BYTES + 1)
        truncated = len(data) > MAX_IMPORT_BYTES
    else:
        try:
            found = read_file(inputs.expanded(Path(path)), MAX_IMPORT_BYTES, confine_symlinks=False)
        except OSError as error:
            raise FactsFileError(f"{name}: cannot read (it {describe(error)})") from None
        data, truncated = found.data, found.truncated
    if truncated:
        raise FactsFileError(f"{name} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB, the most an import "
                             "reads; split it into smaller files")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FactsFileError(f"{name}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return text.replace("\r\n", "\n")


def _first_of_each(offered: list[Offered], *, by_text: bool) -> list[Offered]:
    """Each fact once: a bullet a file repeats is one fact, not an error (``by_text``: the same text, case and
    spacing, Unicode form and final punctuation aside, under any heading, as the import matches the store's facts)."""
    seen: set[str] = set()
    kept = []
    for item in offered:
        identity = normal_form(item.fact.content) if by_text else item.fact.identity if item.fact.id is None \
            else f"id:{item.fact.id}"
        if identity not in seen:
            seen.add(identity)
            kept.append(item)
    return kept
