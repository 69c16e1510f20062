"""Import formats, registered by name as stages are: each parses one kind of source into the entries a facts file
holds (:class:`~..fact_entry.Parsed`), and :mod:`..importing` applies them all alike.

A parser is a plain function of the source's text (:class:`Source`). It is
deterministic: no model, no network, no clock. A name is registered once; a
second parser under a taken name is an error naming both modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

from ...defaults import DEFAULT_TOPIC as DEFAULT_TOPIC  # re-exported: the topic of a source that names none
from ...errors import InputError, StageError
from ..fact_entry import Parsed


@dataclass(frozen=True, slots=True)
class Source:
    """A source's text and what a parser may need besides: its name (a path, or ``<stdin>``) and the topic of
    entries the source gives none (``--topic``, else ``general``)."""

    text: str
    name: str
    topic: str = DEFAULT_TOPIC
    max_facts: int | None = None  # store.max_import_facts: a parser that can count its entries early refuses then

    @property
    def file_name(self) -> str:
        """The last part of the source's name (``MEMORY.md``), for formats that tell files apart by it."""
        return PurePath(self.name).name


Parser = Callable[[Source], Parsed]


@dataclass(frozen=True, slots=True)
class ImportFormat:
    name: str
    parse: Parser
    summary: str  # one line, for help and errors
    origin: str  # the module that registered it
    declarative: bool  # it says what each fact is (tier, confidence), so a changed entry updates its fact


_FORMATS: dict[str, ImportFormat] = {}


def import_format(name: str, *, summary: str, declarative: bool = False) -> Callable[[Parser], Parser]:
    """Register a parser under ``name`` (refused when the name is taken by another parser). A ``declarative``
    format says what each fact is, as a facts file does; any other only adds what the store lacks."""

    def register(parse: Parser) -> Parser:
        taken = _FORMATS.get(name)
        if taken is not None and taken.parse is not parse:
            raise StageError(f"import format {name!r} from {parse.__module__} is already registered by "
                             f"{taken.origin}; give it another name")
        _FORMATS[name] = ImportFormat(name, parse, summary, parse.__module__, declarative)
        return parse

    return register


def known_formats() -> dict[str, ImportFormat]:
    """Every registered format, by name."""
    return dict(_FORMATS)


def get_format(name: str) -> ImportFormat:
    """The format called ``name``, or one InputError naming the known ones."""
    if name not in _FORMATS:
        raise InputError(f"unknown import format {name!r}; known: {', '.join(sorted(_FORMATS))}")
    return _FORMATS[name]
