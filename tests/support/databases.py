"""A database under test, either backend: a SQLite file, or a schema of its own on the real PostgreSQL server.

PostgreSQL tests run against ``PERSONA_TEST_POSTGRES_URL`` (default: this
project's machines' server, ``postgresql://postgres@127.0.0.1:5432/test``).
Each test gets a fresh schema, dropped afterwards. Without a server the tests
skip, saying so; with ``PERSONA_TEST_POSTGRES=required`` (set by ``.ci/run``)
they fail instead.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from pipeline import PersonaStore

# The tables and columns of a database Mnemosyne 3.15 made, for tests of a store beside a real one.
MNEMOSYNE_SCHEMA = Path(__file__).with_name("mnemosyne_schema.sql")
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
REQUIRED = "PERSONA_TEST_POSTGRES"
URL_ENV = "PERSONA_TEST_POSTGRES_URL"


def server_url() -> str:
    return os.environ.get(URL_ENV, DEFAULT_URL)


@cache
def _reachable() -> str | None:
    """None when the server answers, else why not."""
    import psycopg

    try:
        with psycopg.connect(server_url(), connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as error:  # any failure means "no server for these tests"
        return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return None


def require_server() -> None:
    problem = _reachable()
    if problem is None:
        return
    if os.environ.get(REQUIRED) == "required":
        pytest.fail(f"PostgreSQL at {server_url()} is unreachable ({problem}); {REQUIRED}=required makes that a "
                    "failure")
    pytest.skip(f"no PostgreSQL at {server_url()} ({problem}); set {URL_ENV} to a server, or {REQUIRED}=required "
                "to fail instead of skipping")


def with_schema(url: str, schema: str) -> str:
    """The URL of one test's schema; its connections carry the schema as their application_name, so a test
    that kills connections (a server restart) kills only its own, never a concurrent run's."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}&application_name={schema}"


class Db:
    """One database for one test: the target a store opens, and raw access for setup and checks."""

    def __init__(self, kind: str, target: Path | str, schema: str | None = None) -> None:
        self.kind = kind
        self.target = target
        self.schema = schema

    @property
    def is_postgres(self) -> bool:
        return self.kind == "postgresql"

    def store(self, **options: Any) -> PersonaStore:
        return PersonaStore(self.target, **options)

    def settings(self) -> dict[str, str]:
        """Overrides that point settings at this database."""
        return {"store.url": str(self.target)} if self.is_postgres else {"store.path": str(self.target)}

    def execute(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Run one statement outside persona-tier (as another tool would) and commit it."""
        if self.is_postgres:
            import psycopg

            from pipeline.store.postgres.connection import translate

            with psycopg.connect(str(self.target), autocommit=True) as conn:
                cursor = conn.execute(translate(sql), params) if params else conn.execute(sql)
                return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
        with closing(sqlite3.connect(self.target)) as conn, conn:
            return [tuple(row) for row in conn.execute(sql, params).fetchall()]

    def rewind_to(self, version: int) -> None:
        """Set the schema version back to ``version``, taking out what the identity migration added when
        ``version`` is before it, so the migrations from there run again as on a database of that age (the others
        since are made to run again as they are)."""
        from pipeline.store.postgres import schema as postgres
        from pipeline.store.sqlite import schema as sqlite

        migrations = (postgres if self.is_postgres else sqlite).MIGRATIONS
        stamped = next(index for index, group in enumerate(migrations) if any("persona_identity" in s for s in group))
        if version <= stamped:
            if not self.is_postgres:
                from pipeline.store.sqlite.triggers import CHANGES_TRIGGERS, NAMES

                for name in NAMES:
                    self.execute(f"DROP TRIGGER {name}")
                for statement in CHANGES_TRIGGERS:
                    self.execute(statement)
                self.execute("DROP TABLE persona_record_homes")
            self.execute("ALTER TABLE persona_state DROP COLUMN stamp")
            self.execute("DROP TABLE persona_identity")
        self.execute("UPDATE persona_schema SET version = ?", (version,))

    def explain_without_scans(self, sql: str, params: Any) -> list[str]:
        """PostgreSQL's plan for ``sql`` with sequential scans forbidden (a tiny table is scanned otherwise)."""
        import psycopg

        from pipeline.store.postgres.connection import translate

        with psycopg.connect(str(self.target), autocommit=True) as conn:
            conn.execute("SET enable_seqscan = off")
            return [row[0] for row in conn.execute(f"EXPLAIN {translate(sql)}", params).fetchall()]

    def add_memory(self, memory_id: str, content: str, *, table: str = "working_memory", metadata: str | None = None,
                   source: str | None = None, importance: float = 0.5, session: str = "default") -> None:
        """Write a memory the way Mnemosyne would."""
        self.execute(f"INSERT INTO {table} (id, content, metadata_json, source, importance, session_id) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (memory_id, content, metadata, source, importance, session))

    def rows(self, table: str) -> list[tuple[Any, ...]]:
        return self.execute(f"SELECT * FROM {table} ORDER BY 1")

    def fail_deletes_on(self, table: str, message: str) -> None:
        """Make every DELETE on ``table`` fail with ``message``: a real failure inside a transaction."""
        if self.is_postgres:
            self.execute(f"CREATE FUNCTION fail_{table}() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION '{message}'; "
                         "END $$ LANGUAGE plpgsql")
            self.execute(f"CREATE TRIGGER fail_delete BEFORE DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION "
                         f"fail_{table}()")
        else:
            self.execute(f"CREATE TRIGGER fail_delete BEFORE DELETE ON {table} BEGIN SELECT RAISE(ABORT, "
                         f"'{message}'); END")


def fail_inserts_of(db: Db, content: str, message: str) -> None:
    """Make inserting a persona row with this content fail with ``message``."""
    if db.is_postgres:
        db.execute(f"CREATE FUNCTION fail_insert() RETURNS trigger AS $$ BEGIN IF NEW.content = '{content}' THEN "
                   f"RAISE EXCEPTION '{message}'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql")
        db.execute("CREATE TRIGGER fail_insert AFTER INSERT ON memoria_persona FOR EACH ROW EXECUTE FUNCTION "
                   "fail_insert()")
    else:
        db.execute(f"CREATE TRIGGER fail_insert AFTER INSERT ON memoria_persona WHEN NEW.content = '{content}' "
                   f"BEGIN SELECT RAISE(ABORT, '{message}'); END")


def open_database(kind: str, tmp_path: Path) -> Iterator[Db]:
    if kind == "sqlite":
        yield Db(kind, tmp_path / "mnemosyne.db")
        return
    require_server()
    import psycopg

    from pipeline.store.postgres.pools import close_pool

    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    target = with_schema(server_url(), schema)
    try:
        yield Db(kind, target, schema)
    finally:
        close_pool(target)
        with psycopg.connect(server_url(), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
