"""Facts another tool deletes (#49 point 7): Mnemosyne 4.0 deletes a `memoria_persona` row whose source memory is
forgotten, with a plain DELETE. No row of ours keyed by the fact stays, the next render leaves it out, and
`persona status` says how many went since it last looked; our own forget and replace are not counted.

Through the CLI on a real SQLite file (the DELETE by the sqlite3 module, as another process would) and on the
real PostgreSQL server (by psycopg), with two profiles: the other profile's rows stay.
"""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

from pipeline.store.vanished import TABLE, keyed

from ..config.persona_cli import persona
from ..support.databases import Db

HELIX, TERSE, CELLO = "Uses Helix.", "Answers tersely.", "Bob plays the cello."


def configure(database: Db, tmp_path: Path) -> Path:
    store = f"url: {database.target}" if database.is_postgres else f"path: {database.target}"
    config = tmp_path / "persona.yaml"
    config.write_text(f"store:\n  {store}\ninjection:\n  file: {tmp_path / 'persona-{profile}.md'}\n",
                      encoding="utf-8")
    return config


def added(config: Path, *args: str) -> int:
    return int(re.search(r"#(\d+)", persona(config, "add", *args)).group(1))


def delete_elsewhere(database: Db, persona_id: int) -> None:
    """Another tool's plain DELETE, outside persona-tier."""
    if database.is_postgres:
        database.execute("DELETE FROM memoria_persona WHERE id = ?", (persona_id,))
        return
    with closing(sqlite3.connect(database.target)) as conn, conn:
        conn.execute("DELETE FROM memoria_persona WHERE id = ?", (persona_id,))


def rows_of(database: Db, persona_id: int) -> dict[str, int]:
    """Every row of ours keyed by the fact, by table (pending proposals naming it included)."""
    found = {table: database.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", (persona_id,))[0][0]
             for table, _, column in keyed(database.is_postgres)}
    found["persona_proposals"] = database.execute(
        "SELECT count(*) FROM persona_proposals WHERE decision IS NULL AND (old_id = ? OR new_id = ?)",
        (persona_id, persona_id))[0][0]
    return {table: count for table, count in found.items() if count}


def seeded(database: Db, tmp_path: Path) -> tuple[Path, int, int]:
    config = configure(database, tmp_path)
    helix = added(config, HELIX, "--topic", "editor")
    added(config, TERSE, "--topic", "style")
    cello = added(config, CELLO, "--topic", "music", "--profile", "bob")
    persona(config, "lock", str(helix))
    if database.is_postgres:  # the stem index as each backend keeps it (store/stem_sets.py on PostgreSQL)
        database.execute("INSERT INTO persona_stem_sets (profile, topic, persona_id, stems) VALUES ('default', 1, ?, "
                         "ARRAY[1]::bigint[]) ON CONFLICT DO NOTHING", (helix,))
    else:
        database.execute("INSERT INTO persona_stems (profile, stem, persona_id) VALUES ('default', 'helix', ?)",
                         (helix,))
    persona(config, "render")
    persona(config, "render", "--profile", "bob")
    assert HELIX in (tmp_path / "persona-default.md").read_text(encoding="utf-8")
    stems = "persona_stem_sets" if database.is_postgres else "persona_stems"
    assert {"persona_locked", "persona_births", stems} <= set(rows_of(database, helix))
    return config, helix, cello


def test_a_fact_another_tool_deletes_leaves_no_row_of_ours_the_render_drops_it_and_status_counts_it(database,
                                                                                                   tmp_path):
    config, helix, cello = seeded(database, tmp_path)
    bobs = rows_of(database, cello)
    delete_elsewhere(database, helix)
    persona(config, "render")
    assert HELIX not in (tmp_path / "persona-default.md").read_text(encoding="utf-8")
    assert TERSE in (tmp_path / "persona-default.md").read_text(encoding="utf-8")
    assert rows_of(database, helix) == {}  # swept by the render
    said = persona(config, "status")
    assert "deleted elsewhere: another tool deleted 1 fact since the last status" in said
    assert "deleted elsewhere" not in persona(config, "status")  # counted once: the next look starts from nothing
    assert database.execute(f"SELECT count(*) FROM {TABLE}")[0][0] == 0
    assert rows_of(database, cello) == bobs and "deleted elsewhere" not in persona(config, "status", "--profile", "bob")


def test_status_sweeps_and_counts_a_delete_no_render_has_seen_yet(database, tmp_path):
    config, helix, _ = seeded(database, tmp_path)
    terse = int(database.execute("SELECT id FROM memoria_persona WHERE content = ?", (TERSE,))[0][0])
    delete_elsewhere(database, helix)
    delete_elsewhere(database, terse)
    assert rows_of(database, helix)  # nothing has looked yet
    assert "another tool deleted 2 facts since the last status" in persona(config, "status")
    assert rows_of(database, helix) == {} and rows_of(database, terse) == {}


def test_our_own_forget_and_replace_are_not_counted(database, tmp_path):
    config, helix, _ = seeded(database, tmp_path)
    persona(config, "unlock", str(helix))
    persona(config, "forget", str(helix))
    terse = int(database.execute("SELECT id FROM memoria_persona WHERE content = ?", (TERSE,))[0][0])
    persona(config, "replace", str(terse), "Answers in one paragraph.")
    persona(config, "render")
    assert "deleted elsewhere" not in persona(config, "status")
    assert database.execute(f"SELECT count(*) FROM {TABLE}")[0][0] == 0
