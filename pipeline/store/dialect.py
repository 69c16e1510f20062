"""The few statements SQLite and PostgreSQL spell differently.

Everything else is written once, in the subset both accept: ``?`` and
``:name`` placeholders (the PostgreSQL connection translates them),
``ON CONFLICT``, ``RETURNING``, ``COALESCE``, ``CASE``, ``||``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tiers import sql_list

# Every character Python's str.isspace() accepts: "empty" means the same to SQL and to Python.
WHITESPACE_CODES = (9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198,
                    8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288)
TIER_CHECK = f"tier NOT IN ({sql_list()})"
# What PostgreSQL can cast to a timestamp among the texts SQLite's julianday() reads: date, time, fraction, zone.
TIMESTAMP_SHAPE = ("^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
                   "([ T]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]+)?)?)?(Z|[+-][0-9]{2}(:?[0-9]{2})?)?$")


@dataclass(frozen=True)
class Dialect:
    """SQL fragments for one engine."""

    name: str
    begin_write: str  # a write transaction that queues writers instead of deadlocking them
    begin_snapshot: str  # a read transaction that sees one consistent state
    least: str  # the two-argument minimum
    greatest: str
    whitespace: str  # an SQL string of every whitespace character, for trim()
    typed_columns: bool  # PostgreSQL enforces column types; SQLite stores whatever it is given
    fence: str  # ends a subquery the planner must not merge into the query around it (each expression once)
    random_stamp: str  # a new random stamp (16 hex digits): what every change writes beside a profile's counter

    def age_days(self, now: str, column: str) -> str:
        """Days from the timestamp text ``column`` to the timestamp text ``now``."""
        if self.name == "sqlite":
            return f"julianday({now}) - julianday({column})"
        # Another tool's text that is no timestamp is NULL (no age), as julianday() makes it on SQLite,
        # instead of an error that would fail every query reading it.
        moment = f"CASE WHEN {column} ~ '{TIMESTAMP_SHAPE}' THEN CAST({column} AS timestamp) END"
        seconds = f"EXTRACT(EPOCH FROM (CAST({now} AS timestamp) - {moment}))"
        return f"CAST({seconds} AS double precision) / 86400.0"  # EXTRACT gives numeric: Decimal in Python

    def padded_id(self, column: str) -> str:
        """The id as twelve digits, so keys sort as numbers."""
        if self.name == "sqlite":
            return f"printf('%012d', {column})"
        return f"lpad(CAST({column} AS text), 12, '0')"

    def utf8_bytes(self, column: str) -> str:
        """The text column as its UTF-8 bytes, so a prefix and a length count bytes, not characters."""
        return f"CAST({column} AS BLOB)" if self.name == "sqlite" else f"convert_to({column}, 'UTF8')"

    def trimmed(self, column: str) -> str:
        function = "trim" if self.name == "sqlite" else "btrim"
        return f"{function}({column}, {self.whitespace})"

    def is_text(self, column: str) -> str:
        return "TRUE" if self.typed_columns else f"typeof({column}) = 'text'"

    def is_number(self, column: str) -> str:
        return "TRUE" if self.typed_columns else f"typeof({column}) IN ('integer', 'real')"

    def is_integer(self, column: str) -> str:
        return "TRUE" if self.typed_columns else f"typeof({column}) = 'integer'"

    def type_of(self, column: str) -> str:
        return f"CASE WHEN {column} IS NULL THEN 'null' ELSE 'text' END" if self.typed_columns else f"typeof({column})"

    def row_problem(self, max_chars: int) -> str:
        """SQL naming what is wrong with a ``memoria_persona`` row, NULL for a good one.

        Rows are written by other tools too, and the schema allows values that break our
        contract. Such a row is skipped (and named in one warning) by every read that renders
        or ranks, never rendered and never fatal.
        """
        limit = int(max_chars)
        return f"""CASE
    WHEN content IS NULL OR NOT ({self.is_text('content')}) THEN 'content is ' || {self.type_of('content')}
    WHEN length({self.trimmed('content')}) = 0 THEN 'content is empty'
    WHEN length(content) > {limit} THEN 'content is ' || length(content) || ' characters (the limit is {limit})'
    WHEN topic IS NULL OR NOT ({self.is_text('topic')}) THEN 'topic is ' || {self.type_of('topic')}
    WHEN tier IS NULL OR {TIER_CHECK} THEN 'tier is not a tier'
    WHEN confidence IS NOT NULL AND (NOT ({self.is_number('confidence')}) OR confidence < 0 OR confidence > 1)
        THEN 'confidence is not a number from 0 to 1'
    WHEN reinforcement_count IS NOT NULL AND (NOT ({self.is_integer('reinforcement_count')})
                                              OR reinforcement_count < 0)
        THEN 'reinforcement_count is not a count'
END"""

    @property
    def find_fact(self) -> str:
        """The oldest fact of scope :scope ('' for global) with source key :key, else with :topic and :content:
        two index lookups, then each candidate's scope (one primary-key read).

        PostgreSQL indexes a hash of the text (a B-tree entry must stay under 2.7 kB), so it
        compares the hash first and the text itself after.
        """
        by_text = ("topic = :topic AND content = :content" if self.name == "sqlite"
                   else "topic = :topic AND md5(content) = md5(:content) AND content = :content")
        return ("SELECT MIN(id) FROM (SELECT id FROM memoria_persona WHERE session_id = :session "
                "AND source_memory_id = :key UNION ALL SELECT id FROM memoria_persona WHERE session_id = :session "
                f"AND {by_text}) AS found WHERE COALESCE((SELECT b.scope FROM persona_births b WHERE "
                "b.profile = :session AND b.persona_id = found.id), '') = :scope")


SQLITE = Dialect(
    name="sqlite",
    begin_write="BEGIN IMMEDIATE",
    begin_snapshot="BEGIN",
    least="MIN",
    greatest="MAX",
    whitespace="char(" + ", ".join(map(str, WHITESPACE_CODES)) + ")",
    typed_columns=False,
    fence="",  # SQLite's julianday() is cheap: merged, the query keeps its plan
    random_stamp="lower(hex(randomblob(8)))",
)
POSTGRES = Dialect(
    name="postgresql",
    begin_write="BEGIN",
    begin_snapshot="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    least="LEAST",
    greatest="GREATEST",
    whitespace="(" + " || ".join(f"chr({code})" for code in WHITESPACE_CODES) + ")",
    typed_columns=True,
    fence=" OFFSET 0",
    random_stamp="substr(md5(random()::text || clock_timestamp()::text), 1, 16)",
)
