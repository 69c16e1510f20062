"""``facts``: a persona-tier facts file (``persona export`` writes one), the default format."""

from __future__ import annotations

from pathlib import Path

from ..fact_entry import Parsed
from ..facts_file import parse_facts
from .registry import Source, import_format


@import_format("facts", summary="a facts file: YAML facts with topic, content, tier, confidence (the default)",
               declarative=True)
def facts(source: Source) -> Parsed:
    """Each entry as it stands, by its index (``fact #N``); ``--topic`` is not needed, every entry names one."""
    return parse_facts(source.text, Path(source.name))
