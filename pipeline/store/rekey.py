"""The schema migration that moves every text key to the normal form (``fact_row.content_key``).

A fact that came from no memory is keyed by a hash of its topic and text
(``source_memory_id``), and so are its tombstone (a demoted fact stays demoted)
and, once replaced, its superseded row (a source does not bring it back). The
keys used to hash the exact text; they now hash its normal form. SQL cannot
compute that form, so this step runs in Python, inside the migration's
transaction, on both backends: a key is re-made only where it is the old key of
its own row's text, so a key another tool or a facts file chose stays as it was.
"""

from __future__ import annotations

import re
from typing import Any

from .fact_row import content_key, legacy_content_key

TOMBSTONE_TEXT = re.compile(r"^\[demoted from [a-z_]+\] ")  # facts.tombstone_text(tier, content)
FACTS = ("SELECT p.id, p.topic, p.content, p.source_memory_id, b.scope FROM memoria_persona p "
         "LEFT JOIN persona_births b ON b.profile = p.session_id AND b.persona_id = p.id "
         "WHERE p.source_memory_id LIKE 'import:%'")
SUPERSEDED = ("SELECT p.id, p.topic, p.content, p.source_memory_id, b.scope FROM persona_superseded p "
              "LEFT JOIN persona_births b ON b.profile = p.session_id AND b.persona_id = p.id "
              "WHERE p.source_memory_id LIKE 'import:%'")
TOMBSTONES = ("SELECT t.id, t.topic, t.preference, t.source_memory_id, b.scope FROM memoria_preferences t "
              "LEFT JOIN persona_births b ON b.profile = t.session_id AND b.tombstone = t.id "
              "WHERE t.evolution = 'persona_tombstone' AND t.source_memory_id LIKE 'import:%'")


def rekey(conn: Any) -> None:
    """Re-make every old text key as the normal form's (the migration's Python step; idempotent)."""
    for select, table in ((FACTS, "memoria_persona"), (SUPERSEDED, "persona_superseded"),
                          (TOMBSTONES, "memoria_preferences")):
        for row_id, key in _new_keys(conn.execute(select).fetchall(), table == "memoria_preferences"):
            conn.execute(f"UPDATE {table} SET source_memory_id = ? WHERE id = ?", (key, row_id))


def _new_keys(rows: list[Any], tombstones: bool) -> list[tuple[int, str]]:
    """(row id, new key) for each row whose key is the old key of its own topic, text and scope."""
    found = []
    for row_id, topic, content, key, scope in (tuple(row) for row in rows):
        if not isinstance(topic, str) or not isinstance(content, str):
            continue  # another tool's row: its key is not ours to re-make
        text = TOMBSTONE_TEXT.sub("", content, count=1) if tombstones else content
        try:
            if key == legacy_content_key(topic, text, scope) and key != (new := content_key(topic, text, scope)):
                found.append((int(row_id), new))
        except UnicodeEncodeError:  # a lone surrogate no key of ours was ever made from
            continue
    return found
