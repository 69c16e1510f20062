"""The persona store: one module per table, over two backends (an embedded SQLite file, the default, and PostgreSQL).

No SQL runs outside this package, but for the due survey (:mod:`pipeline.schedule.due`), one query
across every profile's tables that is documented there. ``__all__`` is the store's face to the floor above it
(:mod:`pipeline.interchange`, which imports nothing else of the store); ``supersede`` (keys and lineage) and
``origins`` (what an import or an edit writes) are exported as modules, their functions read by module.

Names load on first use (PEP 562), as the package's public API does: the fast path that replays a recorded
answer imports :mod:`.identity` alone, without the rest of the store.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.urls import is_server_url
    from . import origins, supersede
    from .backend import Connection
    from .births import rescope
    from .database import Database, profile_generation
    from .dialect import POSTGRES, SQLITE, Dialect
    from .erasure import Erasure, Journal, erase_fact, reach, scrub, secure_delete
    from .fact_row import FACT_COLUMNS, MAX_ID, Fact, Promotion, Proposal, check_id, content_key, metadata_topic
    from .facts import BROKEN_ROWS, TOMBSTONE_MARK, PersonaStore, tombstone_text
    from .forgotten import REFUSED as FORGOTTEN  # why a forgotten text is refused, as every way in words it
    from .forgotten import ForgottenTest, admit, ask_forgotten, ask_secret, forgotten_test, same_fact
    from .new_rows import NewRow, insert_rows
    from .proposals import propose_after_import
    from .slots import topic_for
    from .validation import MAX_TOPIC_CHARS, check_text, scope_in_file

# name -> (the module that defines it, its name there; None: the module itself)
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "BROKEN_ROWS": (".facts", "BROKEN_ROWS"),
    "Connection": (".backend", "Connection"),
    "Database": (".database", "Database"),
    "Dialect": (".dialect", "Dialect"),
    "Erasure": (".erasure", "Erasure"),
    "Journal": (".erasure", "Journal"),
    "FACT_COLUMNS": (".fact_row", "FACT_COLUMNS"),
    "FORGOTTEN": (".forgotten", "REFUSED"),
    "Fact": (".fact_row", "Fact"),
    "ForgottenTest": (".forgotten", "ForgottenTest"),
    "MAX_ID": (".fact_row", "MAX_ID"),
    "NewRow": (".new_rows", "NewRow"),
    "MAX_TOPIC_CHARS": (".validation", "MAX_TOPIC_CHARS"),
    "POSTGRES": (".dialect", "POSTGRES"),
    "PersonaStore": (".facts", "PersonaStore"),
    "Promotion": (".fact_row", "Promotion"),
    "Proposal": (".fact_row", "Proposal"),
    "SQLITE": (".dialect", "SQLITE"),
    "TOMBSTONE_MARK": (".facts", "TOMBSTONE_MARK"),
    "admit": (".forgotten", "admit"),
    "ask_forgotten": (".forgotten", "ask_forgotten"),
    "ask_secret": (".forgotten", "ask_secret"),
    "check_id": (".fact_row", "check_id"),
    "check_text": (".validation", "check_text"),
    "content_key": (".fact_row", "content_key"),
    "erase_fact": (".erasure", "erase_fact"),
    "forgotten_test": (".forgotten", "forgotten_test"),
    "same_fact": (".forgotten", "same_fact"),
    "insert_rows": (".new_rows", "insert_rows"),
    "is_server_url": ("..config.urls", "is_server_url"),
    "metadata_topic": (".fact_row", "metadata_topic"),
    "origins": (".origins", None),
    "profile_generation": (".database", "profile_generation"),
    "propose_after_import": (".proposals", "propose_after_import"),
    "topic_for": (".slots", "topic_for"),
    "reach": (".erasure", "reach"),
    "rescope": (".births", "rescope"),
    "scope_in_file": (".validation", "scope_in_file"),
    "scrub": (".erasure", "scrub"),
    "secure_delete": (".erasure", "secure_delete"),
    "supersede": (".supersede", None),
    "tombstone_text": (".facts", "tombstone_text"),
}


def __getattr__(name: str) -> Any:
    """Load an exported name on first use (``from pipeline.store import PersonaStore`` included)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    found = import_module(module, __name__)
    value = found if attribute is None else getattr(found, attribute)
    globals()[name] = value
    return value


__all__ = [
    "BROKEN_ROWS",
    "FACT_COLUMNS",
    "FORGOTTEN",
    "MAX_ID",
    "MAX_TOPIC_CHARS",
    "POSTGRES",
    "SQLITE",
    "TOMBSTONE_MARK",
    "Connection",
    "Database",
    "Dialect",
    "Erasure",
    "Fact",
    "ForgottenTest",
    "Journal",
    "NewRow",
    "PersonaStore",
    "Promotion",
    "Proposal",
    "admit",
    "ask_forgotten",
    "ask_secret",
    "check_id",
    "check_text",
    "content_key",
    "erase_fact",
    "forgotten_test",
    "insert_rows",
    "is_server_url",
    "metadata_topic",
    "origins",
    "profile_generation",
    "propose_after_import",
    "reach",
    "rescope",
    "same_fact",
    "scope_in_file",
    "scrub",
    "secure_delete",
    "supersede",
    "tombstone_text",
    "topic_for",
]
