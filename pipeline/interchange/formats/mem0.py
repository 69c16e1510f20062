"""``mem0``: what mem0's ``get_all`` returns, saved as JSON (or the platform's export of it).

mem0's Python client returns ``{"results": [...]}`` (and ``"relations"`` with a
graph store; mem0 before 1.0 returned the bare list). Each memory is an object
with ``id``, ``memory`` (the text), ``hash``, ``metadata`` (null or an object),
``created_at``, ``updated_at`` and the ids it was filed under (``user_id``...);
the hosted platform adds ``categories``. Each memory's text is a fact, under the
topic its ``metadata`` names (``topic``, else ``category``), else its first
category, else ``--topic``. Where it came from is kept as the fact's reason
(``mem0 memory ID, created AT``). Memories are taken oldest first by ``created_at`` (mem0 lists them in no
promised order), so the import's proposals never have a later memory replaced by an earlier one.
"""

from __future__ import annotations

import json
from typing import Any

from ...clock import from_db, to_db
from ...errors import FactsFileError
from ...fs import bounded_json
from ..fact_entry import Parsed, Refusal, offer
from .registry import Source, import_format

LISTS = ("results", "memories")  # get_all's key; the platform export's


@import_format("mem0", summary="mem0's get_all (or export) JSON: each memory's text is a fact")
def mem0(source: Source) -> Parsed:
    """Each memory, by its position (``memory #N``, with its id)."""
    parsed = Parsed()
    memories = _memories(source)
    parsed.check_count(source.name, source.max_facts, count=len(memories))  # before a single entry is built
    # Oldest first (mem0 promises no order), so a later memory may update an earlier one, never the reverse; each
    # keeps its position in the file as its name.
    dated = sorted(enumerate(memories), key=lambda pair: _created(pair[1]))
    memories.clear()
    dated.reverse()  # taken from the end, so each memory's object is freed as its entry is made
    while dated:
        index, memory = dated.pop()
        where = f"memory #{index + 1}" + (f" (id {memory['id']})" if isinstance(memory, dict)
                                           and isinstance(memory.get("id"), str | int) else "")
        if not isinstance(memory, dict) or not isinstance(memory.get("memory"), str):
            parsed.bad.append(Refusal(where, "expected an object with the memory's text in \"memory\""))
            continue
        parsed.take(offer(where, {"topic": _topic(memory) or source.topic, "content": memory["memory"],
                                  **({"reason": reason} if (reason := _reason(memory)) else {})},
                          dated=_dated(_created(memory))))
    return parsed


def _memories(source: Source) -> list[Any]:
    try:
        document = bounded_json.loads(source.text)
    except bounded_json.JsonTooDeep as error:
        raise FactsFileError(f"{source.name}:{error.lineno}:{error.colno}: {error.msg}") from None
    except json.JSONDecodeError as error:
        raise FactsFileError(f"{source.name}:{error.lineno}:{error.colno}: not JSON ({error.msg})") from None
    if isinstance(document, dict):
        document = next((document[key] for key in LISTS if key in document), None)
    if not isinstance(document, list):
        raise FactsFileError(f"{source.name}: expected mem0's get_all output: a list of memories, or an object "
                             "with a \"results\" list")
    return document


def _dated(created: str) -> str | None:
    """``created_at`` in the store's UTC format (a fact's ``created_at``), None when it is no ISO 8601 time: an
    import against stored facts is ordered by it (#50)."""
    try:
        return to_db(from_db(created)) if created else None
    except ValueError:
        return None


def _created(memory: Any) -> str:
    """The memory's ``created_at`` (ISO 8601 sorts as text), "" for none: undated memories keep their place first."""
    created = memory.get("created_at") if isinstance(memory, dict) else None
    return created if isinstance(created, str) else ""


def _topic(memory: dict[str, Any]) -> str | None:
    metadata = memory.get("metadata")
    named = [metadata.get(key) for key in ("topic", "category")] if isinstance(metadata, dict) else []
    categories = memory.get("categories")
    named += categories[:1] if isinstance(categories, list) else []
    return next((value.strip() for value in named if isinstance(value, str) and value.strip()), None)


def _reason(memory: dict[str, Any]) -> str | None:
    parts = [f"mem0 memory {memory['id']}" if isinstance(memory.get("id"), str | int) else "mem0 memory"]
    if isinstance(memory.get("created_at"), str):
        parts.append(f"created {memory['created_at']}")
    return ", ".join(parts)
