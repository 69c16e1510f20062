"""The persona store and its two backends: an embedded SQLite file (the default) and PostgreSQL."""

from ..config.urls import is_server_url
from .backend import Connection
from .dialect import POSTGRES, SQLITE, Dialect
from .facts import (
    BROKEN_ROWS,
    FACT_COLUMNS,
    MAX_ID,
    TOMBSTONE_MARK,
    Fact,
    PersonaStore,
    Promotion,
    check_id,
    content_key,
    metadata_topic,
    profile_generation,
    tombstone_text,
)

__all__ = [
    "BROKEN_ROWS",
    "FACT_COLUMNS",
    "MAX_ID",
    "POSTGRES",
    "SQLITE",
    "TOMBSTONE_MARK",
    "Connection",
    "Dialect",
    "Fact",
    "PersonaStore",
    "Promotion",
    "check_id",
    "content_key",
    "is_server_url",
    "metadata_topic",
    "profile_generation",
    "tombstone_text",
]
