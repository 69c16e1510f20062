"""Is a fact already there? The same topic and text, in their normal form (:func:`pipeline.text.normal_form`),
in the same scope: the one answer ``add``, ``replace`` and ``promote`` share (``add`` also finds the same text
under another topic: the fact is already there, issue 50) (an import reads the profile once and
asks :class:`~.importing.Known`).

A fact that came from no memory carries the key of its normal form (``fact_row.content_key``), so it is found
by one index look-up. A fact promoted from a memory, or written by another tool, carries no such key: a write
that may scan (``add``, ``replace``) compares those in Python; a promote, whose cost must not grow with the
profile, looks up the key and the exact text only.
"""

from __future__ import annotations

from typing import Any

from ..text import normal_form
from .backend import Connection
from .births import BIRTH_JOIN
from .database import Database
from .fact_row import FACT_COLUMNS, content_key

UNKEYED = (f"SELECT p.id, p.topic, p.content, COALESCE(b.scope, '') FROM memoria_persona p {BIRTH_JOIN} "
           "WHERE p.session_id = ? AND (p.source_memory_id IS NULL OR p.source_memory_id NOT LIKE 'import:%') "
           "ORDER BY p.id")


def existing_fact(store: Database, conn: Connection, topic: str, content: str, scope: str | None, *,
                  scan: bool = True, any_topic: bool = False) -> Any:
    """The oldest current row (FACT_COLUMNS) stating ``topic`` and ``content`` in ``scope``, or None; with
    ``any_topic``, the same text under another topic is the same fact too (``add``: it is already there)."""
    row = conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ({store.dialect.find_fact})",
                       {"session": store.profile, "key": content_key(topic, content, scope), "topic": topic,
                        "content": content, "scope": scope or ""}).fetchone()
    if row is not None or not scan:
        return row
    found = _unkeyed(store, conn, (normal_form(topic), normal_form(content), scope or ""))
    if found is None and any_topic:
        found = _any_topic(store, conn, normal_form(content), scope or "")
    if found is None:
        return None
    return conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ?", (found,)).fetchone()


def _unkeyed(store: Database, conn: Connection, wanted: tuple[str, str, str]) -> int | None:
    """The first fact without a text key whose normal form and scope are ``wanted``."""
    for fact_id, topic, content, scope in conn.execute(UNKEYED, (store.profile,)):
        if isinstance(topic, str) and isinstance(content, str) and \
                (normal_form(topic), normal_form(content), scope) == wanted:
            return int(fact_id)
    return None


ANY_TOPIC = (f"SELECT p.id, p.content, COALESCE(b.scope, '') FROM memoria_persona p {BIRTH_JOIN} "
             "WHERE p.session_id = ? ORDER BY p.id")


def _any_topic(store: Database, conn: Connection, content: str, scope: str) -> int | None:
    """The first fact of ``scope`` whose text's normal form is ``content``, under whatever topic."""
    for fact_id, text, where in conn.execute(ANY_TOPIC, (store.profile,)):
        if isinstance(text, str) and where == scope and normal_form(text) == content:
            return int(fact_id)
    return None
