"""``persona export``: the profile's facts as a facts file, with what an import needs to match them again.

Each fact is written with its ``id`` (an import matches it by the id, so an
edited text updates that fact), its ``key``, ``reinforcement_count``,
``confidence``, ``tier`` and ``topic`` (:mod:`.facts_file` reads them back).
``persona edit`` (:mod:`.edit_file`) writes its entries the same way.
"""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML

from ..scopes import kind_of, value_of
from ..store import Fact, PersonaStore, supersede

UNICODE_BREAKS = "\x85\u2028\u2029"  # line breaks YAML folds into a space unless double-quoted
__all__ = ["dump_yaml", "export_entry", "export_facts"]


def export_facts(store: PersonaStore) -> str:
    """The profile's current facts as a facts file with ids, keys and reinforcement counts (see the module)."""
    with store.snapshot() as conn:
        keys = supersede.keys_of(conn, store.profile)
        facts = store.list()
    entries = [export_entry(fact, keys.get(fact.id)) for fact in facts]
    return (f"# persona export of profile {store.profile!r}: edit, then `persona import` this file.\n"
            "# Facts are matched by id: an edited text under the same id updates that fact.\n"
            + dump_yaml({"facts": entries}))


def dump_yaml(document: Any) -> str:
    """Entries as export and ``persona edit`` write them: block style, one fact on one line, any text intact."""
    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.width = 4096  # a fact stays on one line, as the user reads and edits it
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.representer.add_representer(str, _text)
    yaml.dump(document, out)
    return out.getvalue()


def _text(representer: Any, text: str) -> Any:
    """A string as YAML; one holding a Unicode line break is double-quoted, where it is escaped (the emitter writes
    it raw in other styles, and a reader folds it into a space)."""
    style = '"' if any(mark in text for mark in UNICODE_BREAKS) else None
    return representer.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def export_entry(fact: Fact, key: str | None) -> dict[str, Any]:
    """One fact as an export writes it (``persona edit`` writes the same, its writer as a comment). A value another
    tool left empty (a NULL confidence) is left out, so the file imports again."""
    entry = {"id": fact.id, **({"key": key} if key is not None else {}),
            **({"scope": {kind_of(fact.scope): value_of(fact.scope)}} if fact.scope else {}), "topic": fact.topic,
            "content": fact.content, "tier": fact.tier, "confidence": fact.confidence,
            "reinforcement_count": fact.reinforcement_count,
            **({"reason": fact.promotion_reason} if fact.promotion_reason else {}),
            **({"writer": fact.writer} if fact.writer else {})}
    return {name: value for name, value in entry.items() if value is not None}
