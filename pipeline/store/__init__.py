"""The persona store: one module per table, over two backends (an embedded SQLite file, the default, and PostgreSQL).

No SQL runs outside this package, but for the due survey (:mod:`pipeline.schedule.due`), one query
across every profile's tables that is documented there. ``__all__`` is the store's face to the floor above it
(:mod:`pipeline.interchange`, which imports nothing else of the store); ``supersede`` (keys and lineage) and
``origins`` (what an import or an edit writes) are exported as modules, their functions read by module.
"""

from ..config.urls import is_server_url
from . import origins, supersede
from .backend import Connection
from .births import rescope
from .database import Database, profile_generation
from .dialect import POSTGRES, SQLITE, Dialect
from .erasure import Erasure, Journal, erase_fact, reach, scrub, secure_delete
from .fact_row import FACT_COLUMNS, MAX_ID, Fact, Promotion, Proposal, check_id, content_key
from .facts import BROKEN_ROWS, TOMBSTONE_MARK, PersonaStore, metadata_topic, tombstone_text
from .forgotten import REFUSED as FORGOTTEN  # why a forgotten text is refused, as every way in words it
from .forgotten import ForgottenTest, admit, fold, forgotten_test
from .proposals import propose_after_import
from .validation import MAX_TOPIC_CHARS, check_text, scope_in_file

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
    "PersonaStore",
    "Promotion",
    "Proposal",
    "admit",
    "check_id",
    "check_text",
    "content_key",
    "erase_fact",
    "fold",
    "forgotten_test",
    "is_server_url",
    "metadata_topic",
    "origins",
    "profile_generation",
    "propose_after_import",
    "reach",
    "rescope",
    "scope_in_file",
    "scrub",
    "secure_delete",
    "supersede",
    "tombstone_text",
]
