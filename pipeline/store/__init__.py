"""The persona store: one module per table, over two backends (an embedded SQLite file, the default, and PostgreSQL).

No SQL runs outside this package, but for the due survey (:mod:`pipeline.schedule.due`), one query
across every profile's tables that is documented there.
"""

from ..config.urls import is_server_url
from .backend import Connection
from .database import Database, profile_generation
from .dialect import POSTGRES, SQLITE, Dialect
from .fact_row import FACT_COLUMNS, MAX_ID, Fact, Promotion, Proposal, check_id, content_key
from .facts import BROKEN_ROWS, TOMBSTONE_MARK, PersonaStore, metadata_topic, tombstone_text

__all__ = [
    "BROKEN_ROWS",
    "FACT_COLUMNS",
    "MAX_ID",
    "POSTGRES",
    "SQLITE",
    "TOMBSTONE_MARK",
    "Connection",
    "Database",
    "Dialect",
    "Fact",
    "PersonaStore",
    "Promotion",
    "Proposal",
    "check_id",
    "content_key",
    "is_server_url",
    "metadata_topic",
    "profile_generation",
    "tombstone_text",
]
