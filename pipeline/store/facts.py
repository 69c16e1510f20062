"""The persona store: ``memoria_persona`` in a Mnemosyne-compatible database.

Every operation runs in one transaction and reads only its profile's rows (the
``session_id`` column). The backend is an embedded SQLite file by default, or a
PostgreSQL server named by a ``postgresql://`` URL; both run the same SQL but
for the few fragments in :mod:`.dialect`.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER, DEFAULT_TOPIC
from ..errors import InputError, NotFoundError
from ..text import same_topic
from ..tiers import TIERS, sql_rank
from ..warn_once import ProblemLog
from . import fact_row, proposals, render_rows, supersede
from .already import existing_fact
from .backend import Connection, Cursor
from .births import BIRTH_JOIN, deleted_by_us, link_tombstone, stamp, writer_of
from .dialect import SQLITE
from .fact_row import FACT_COLUMNS, FACT_WITH_WRITER, ROW_FIELDS, Fact, Promotion, Proposal, check_id, content_key
from .forgotten import ANY_FORGOTTEN, ForgottenTest, admit, nothing_forgotten
from .held_writes import HeldWrites
from .render_rows import RenderState, persona_sql, render_read, render_state, rows_unchanged_key, state_and_key
from .validation import MAX_TOPIC_CHARS, check_confidence, check_scope, check_text, check_tier

log = logging.getLogger(__name__)
BROKEN_ROWS = ProblemLog(log)

__all__ = ["TOMBSTONE_MARK", "Fact", "PersonaStore", "Promotion", "Proposal", "tombstone_text"]

# Written to memoria_preferences.evolution so tombstones are told apart from
# real preferences by a column, not by parsing text.
TOMBSTONE_MARK = "persona_tombstone"
TIER_ORDER = sql_rank()
# The mark is written into the SQL, not bound: SQLite uses the partial index of tombstones only for the literal, and
# prepares a statement again for every new value of a parameter that index's condition might match (25 µs, most
# of a promote's look-up).
TOMBSTONE_ROW = f"evolution = '{TOMBSTONE_MARK}'"
# Beside what it reads, whether the profile ever forgot a text or dismissed one proposal: if not, neither is read.
PROMOTE_LOOKUP = f"""
SELECT (SELECT id FROM memoria_persona WHERE session_id = :session AND source_memory_id = :memory),
       (SELECT 1 FROM memoria_preferences WHERE session_id = :session AND source_memory_id = :memory
        AND {TOMBSTONE_ROW}),
       memory.content, memory.metadata_json, ({ANY_FORGOTTEN}), ({proposals.ANY_DISMISSAL})
FROM (SELECT 1 AS one) AS one LEFT JOIN (
    SELECT content, metadata_json FROM working_memory WHERE {{mine}}id = :memory
    UNION ALL SELECT content, metadata_json FROM episodic_memory WHERE {{mine}}id = :memory LIMIT 1
) AS memory ON TRUE
"""
# store.memory_scope: every memory in the database is the user's, or only those filed under the profile.
PROMOTE_LOOKUPS = {"all": PROMOTE_LOOKUP.format(mine=""),
                   "profile": PROMOTE_LOOKUP.format(mine="session_id = :session AND ")}
def tombstone_text(tier: str, content: str) -> str:
    """The tombstone's preference text, as the existing tier writes it."""
    return f"[demoted from {tier}] {content}"


class PersonaStore(HeldWrites):
    """Store operations on ``memoria_persona``, one profile (``session``); :mod:`.fact_locks`, :mod:`.held_writes`."""

    # -- reads ---------------------------------------------------------

    def get(self, persona_id: int) -> Fact:
        """One fact of this session, or NotFoundError."""
        check_id(persona_id)
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {FACT_WITH_WRITER} FROM memoria_persona p {BIRTH_JOIN} WHERE p.id = ? AND p.session_id = ?",
                (persona_id, self.profile),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no persona fact with id {persona_id} in profile {self.profile!r}")
        return fact_with_writer(row)

    def list(self, *, tier: str | None = None, topic: str | None = None) -> list[Fact]:
        """Facts in tier order (permanent first), then most reinforced, then by id; broken rows are skipped."""
        clauses, params = ["session_id = ?", f"({self.row_problem()}) IS NULL"], [self.profile]
        if tier is not None:
            clauses.append("tier = ?")
            params.append(check_tier(tier))
        if topic is not None and "\x00" in topic:  # no stored topic holds one; say so alike on both backends
            raise InputError("topic contains a NUL byte")
        sql = (
            f"SELECT {FACT_WITH_WRITER} FROM memoria_persona p {BIRTH_JOIN} WHERE {' AND '.join(clauses)} "
            f"ORDER BY {TIER_ORDER}, reinforcement_count DESC, id"
        )
        self.warn_broken_rows()
        with self.read() as conn:
            found = [fact_with_writer(row) for row in conn.execute(sql, params)]
        # A topic in any case and Unicode form: `Git` and `git` are one (pipeline/text.py).
        return found if topic is None else [fact for fact in found if same_topic(fact.topic, topic)]

    def render_rows(self, conn: Connection, now: str, *, scoped: bool = False, aging: bool = False) -> Cursor:
        """Every fact of the profile as a row ready to become a render's fact (:func:`persona_sql`); with
        ``aging`` (where :meth:`keyed_state` gives a key), each row's age base for its age."""
        if aging:
            return conn.execute(persona_sql(self.dialect, scoped, aging=True), (self.profile,))
        return conn.execute(persona_sql(self.dialect, scoped), (now, self.profile))

    def keyed_state(self, conn: Connection, now: str) -> tuple[RenderState, tuple[float, Any] | None]:
        """:meth:`render_state`, and on SQLite for a profile unscoped that never forgot a fact, ``now`` as an age
        base with what says its rows are those read before (:func:`rows_unchanged_key`), in one statement while
        our triggers stand as last counted; None on a server, where a render reads the rows again."""
        if self.dialect is not SQLITE:
            return self.render_state(conn), None
        state, moment, key = state_and_key(conn, self.profile, now, self.triggers_whole)
        if state.scoped or state.forgot:
            return state, None
        return state, (moment, key) if key is not None else rows_unchanged_key(conn, self.profile, now,
                                                                                self.triggers_whole)

    def render_state(self, conn: Connection) -> RenderState:
        """What a render reads before the facts, in one statement (see :class:`RenderState`)."""
        return render_state(conn, self.profile)

    def render_read(self, conn: Connection, now: str) -> tuple[RenderState, Iterable[Any]]:
        """A server's render read: the state and the rows of its facts (:meth:`render_rows`) in one statement
        (:func:`.render_rows.render_read`), or its answer if sent ahead at ``now``. SQLite reads the state first."""
        ahead, self.ahead = self.ahead, None
        answer = render_rows.render_answer(conn, self.dialect, self.profile, now, ahead[1]) if ahead and \
            ahead[0] == now else None
        return render_read(conn, self.dialect, self.profile, now) if answer is None else answer

    def read_ahead(self, conn: Connection, now: str) -> None:
        """Send :meth:`render_read`'s statement unread (a sweep's, with the tick lock's), for the render at ``now``
        (answered only if the store changed since the last render: else read when a render asks)."""
        self.ahead = (now, render_rows.ask_render_read(conn, self.dialect, self.profile, now, if_changed=True))

    def retention_rows(self, now: str) -> Sequence[Any]:
        """(id, tier, confidence, reinforcements, age in days) of every fact retention may act on, by id.

        Ages come from SQL and only the facts that act become Fact objects: a no-op pass stays cheap.
        """
        with self.read() as conn:
            return conn.execute(
                "SELECT id, tier, COALESCE(confidence, ?), COALESCE(reinforcement_count, 0), "
                f"{self.dialect.age_days('?', 'COALESCE(last_reinforced_at, created_at)')} "
                f"FROM memoria_persona WHERE session_id = ? AND tier != 'permanent' AND ({self.row_problem()}) IS NULL "
                "ORDER BY id",
                (DEFAULT_CONFIDENCE, now, self.profile),
            ).fetchall()

    def set_tier(self, conn: Connection, persona_id: int, tier: str) -> None:
        """Move a fact to ``tier`` (inside the caller's transaction); the table's trigger records the change."""
        conn.execute("UPDATE memoria_persona SET tier = ? WHERE id = ? AND session_id = ?",
                     (check_tier(tier), persona_id, self.profile))

    def warn_broken_rows(self) -> tuple[tuple[int, str], ...]:
        """Name every row of this session that breaks the contract, once each per process; return them."""
        with self.read() as conn:
            broken = tuple((int(row[0]), str(row[1])) for row in conn.execute(
                f"SELECT id, problem FROM (SELECT id, {self.row_problem()} AS problem FROM memoria_persona "
                "WHERE session_id = ?) AS checked WHERE problem IS NOT NULL ORDER BY id", (self.profile,)))
        for fact_id, problem in broken:
            BROKEN_ROWS.warn(f"database {self.label}: skipping persona fact #{fact_id}: {problem}")
        return broken

    def count_by_tier(self) -> dict[str, int]:
        """How many facts this session holds in each tier."""
        with self.read() as conn:
            rows = conn.execute(
                "SELECT tier, COUNT(*) FROM memoria_persona WHERE session_id = ? GROUP BY tier", (self.profile,)
            ).fetchall()
        counts: dict[str, int] = dict.fromkeys(TIERS, 0)
        counts.update({tier: count for tier, count in rows})
        return counts

    def is_tombstoned(self, source_memory_id: str) -> bool:
        """Whether a memory was demoted or evicted in this session (sticky)."""
        with self.read() as conn:
            row = conn.execute(
                f"SELECT 1 FROM memoria_preferences WHERE session_id = ? AND source_memory_id = ? AND {TOMBSTONE_ROW}",
                (self.profile, source_memory_id),
            ).fetchone()
        return row is not None

    # -- writes --------------------------------------------------------

    def promote(
        self, memory_id: str, *, tier: str = DEFAULT_TIER, reason: str | None = None, force: bool = False
    ) -> Promotion:
        """Copy a working or episodic memory into the persona.

        Promoting an already promoted memory returns the existing row. A
        demoted memory stays demoted unless ``force`` is given.
        """
        check_tier(tier)
        with self.transaction() as conn:
            # One look-up answers everything a promote needs to know; a commit is what a promote costs.
            existing, tombstoned, content, metadata, forgot, dismissed = conn.execute(
                PROMOTE_LOOKUPS[self.memory_scope], {"session": self.profile, "memory": memory_id}).fetchone()
            if existing is not None:
                return Promotion(self.get(existing), created=False)
            if tombstoned and not force:
                raise InputError(f"memory {memory_id} was demoted; pass --force to promote it again")
            if content is None:
                mine = f" filed under profile {self.profile!r}" if self.memory_scope == "profile" else ""
                raise NotFoundError(f"no memory with id {memory_id}{mine} in working_memory or episodic_memory")
            if not isinstance(content, str) or not content.strip():
                raise InputError(f"memory {memory_id} has empty content; nothing to promote")
            content = check_text(f"memory {memory_id}", content, self.max_fact_chars, setting="store.max_fact_chars")
            topic = fact_row.metadata_topic(metadata) or self._linked_topic(conn, memory_id)
            if (already := existing_fact(self, conn, topic, content, None, scan=False)) is not None:
                return Promotion(Fact(**dict(already)), created=False)  # the same fact, added or imported
            fact = self.insert_row(conn, tier=tier, topic=topic, content=content, confidence=DEFAULT_CONFIDENCE,
                                   source=memory_id, reason=reason, force=force, writer=f"promote:{memory_id}",
                                   forgotten=None if forgot else nothing_forgotten)
            found, related = proposals.check_write(self, conn, fact, dismissals=dismissed is not None)
        return Promotion(fact, created=True, proposals=found, related=related)

    def add(
        self,
        content: str,
        *,
        topic: str,
        tier: str = DEFAULT_TIER,
        confidence: float = DEFAULT_CONFIDENCE,
        reason: str | None = None,
        force: bool = False,
        scope: str | None = None,
    ) -> Promotion:
        """Add a fact directly, for ``scope`` (None: global; see :mod:`pipeline.scopes`). The same topic, text
        and scope twice gives one row.

        A fact that was demoted stays demoted unless ``force`` is given, as
        with promote and import. The result's ``proposals`` name the older
        facts of the topic it may update (``supersede.detect``); nothing is
        superseded until one is accepted.
        """
        content = check_text("content", content, self.max_fact_chars, setting="store.max_fact_chars")
        topic = check_text("topic", topic, MAX_TOPIC_CHARS)
        check_tier(tier)
        check_confidence(confidence)
        scope = check_scope(scope)
        key = content_key(topic, content, scope)
        with self.transaction() as conn:
            existing = existing_fact(self, conn, topic, content, scope, any_topic=True)  # under any topic
            if existing is not None:
                return Promotion(Fact(**dict(existing), scope=scope), created=False)
            if not force and self.is_tombstoned(key):
                raise InputError("that fact was demoted; pass --force to add it again")
            fact = self.insert_row(conn, tier=tier, topic=topic, content=content, confidence=confidence, source=key,
                                   reason=reason, force=force, scope=scope)
            found, related = proposals.check_write(self, conn, fact)
        return Promotion(fact, created=True, proposals=found, related=related)

    def demote(self, persona_id: int, *, reason: str | None = None) -> Fact:
        """Remove a fact, leaving a tombstone in ``memoria_preferences``, atomically."""
        with self.transaction() as conn:
            fact = self.get(persona_id)
            self.bury(conn, fact, reason or "demoted")
        return fact

    def reinforce(self, persona_id: int) -> Fact:
        """Count one more reinforcement, restart the fact's clock, and raise its confidence by the step (max 1)."""
        check_id(persona_id)
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE memoria_persona SET reinforcement_count = reinforcement_count + 1, "
                f"last_reinforced_at = ?, confidence = {self.dialect.least}(1.0, COALESCE(confidence, ?) + ?) "
                "WHERE id = ? AND session_id = ?",
                (self.now(), DEFAULT_CONFIDENCE, self.reinforce_step, persona_id, self.profile),
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"no persona fact with id {persona_id} in profile {self.profile!r}")
        return self.get(persona_id)

    def replace(self, target: int | str, content: str, *, topic: str | None = None, tier: str | None = None,
                reason: str | None = None, force: bool = False,
                scope: str | None = supersede.SAME_SCOPE) -> supersede.Replacement:
        """Supersede a fact (an id, or a piece of text only it contains) with ``content``; see :mod:`.supersede`."""
        return supersede.replace(self, target, content, topic=topic, tier=tier, reason=reason, force=force,
                                 scope=scope)

    def undo_replace(self, persona_id: int) -> supersede.Restoration:
        """Undo the supersession through ``persona_id`` (the replacement, or a fact it replaced)."""
        return supersede.undo(self, persona_id)

    def history(self, persona_id: int) -> builtins.list[supersede.Link]:
        """The supersession chain through a fact, current or superseded, oldest first."""
        return supersede.history(self, persona_id)

    def proposals(self, *, scan: bool = False) -> builtins.list[Proposal]:
        """The open proposals, oldest first; ``scan`` first proposes what no single write saw (stored facts)."""
        return proposals.open_proposals(self, scan=scan)

    def accept(self, proposal_id: int) -> Proposal:
        """Accept a proposal: its new fact supersedes the old one (undo: :meth:`undo_replace`)."""
        return supersede.accept(self, proposal_id)

    def dismiss(self, proposal_id: int) -> Proposal:
        """Dismiss a proposal: both facts stay, and the pair is never proposed again."""
        return proposals.dismiss(self, proposal_id)

    # -- helpers shared with import and retention ------------------------

    def existing(self, conn: Connection, topic: str, content: str, scope: str | None) -> Fact | None:
        """The current fact that states ``topic`` and ``content`` in ``scope`` (normal forms: :mod:`.already`)."""
        row = existing_fact(self, conn, topic, content, scope)
        return None if row is None else Fact(**dict(row), scope=scope)

    def insert_row(
        self,
        conn: Connection,
        *,
        tier: str,
        topic: str,
        content: str,
        confidence: float,
        source: str | None,
        reason: str | None,
        force: bool = False,
        forgotten: ForgottenTest | None = None,
        writer: str | None = None,
        scope: str | None = None,
    ) -> Fact:
        """Insert a fact (inside the caller's transaction) and return it as stored, stamped with its ``writer``
        (default: the store's own, :attr:`writer`).

        Forgotten text (or a forgotten source memory) is refused here, for every way in, unless ``force``;
        ``forgotten`` is a test the caller already read (an import's, for all its rows).
        """
        admit(self, conn, content, source, force=force, test=forgotten)
        now = self.now()
        row = conn.execute(
            "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, source_memory_id, "
            "created_at, last_reinforced_at, reinforcement_count, promotion_reason) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) RETURNING {FACT_COLUMNS}",
            (self.profile, tier, topic, content, confidence, source, now, now, reason),
        ).fetchone()
        written_by = writer or self.writer
        stamp(conn, self.profile, int(row["id"]), written_by, scope)
        return Fact(**dict(row), writer=written_by, scope=scope)

    def bury(self, conn: Connection, fact: Fact, reason: str) -> None:
        """Tombstone then delete; the caller's transaction makes the pair atomic. The fact's birth keeps its
        tombstone, so a forget by the fact's own id still finds it."""
        tombstone = conn.execute(
            "INSERT INTO memoria_preferences (session_id, preference, topic, evolution, context_snippet, "
            "source_memory_id) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (
                fact.session_id,
                tombstone_text(fact.tier, fact.content),
                fact.topic,
                TOMBSTONE_MARK,
                reason,
                fact.source_memory_id,
            ),
        ).fetchone()
        link_tombstone(conn, self.profile, fact.id, int(tombstone[0]))
        conn.execute("DELETE FROM memoria_persona WHERE id = ?", (fact.id,))
        deleted_by_us(conn, self.profile, fact.id)

    def all_ids(self, conn: Connection) -> Sequence[int]:
        """Every fact id of the profile, broken rows included."""
        return [int(row[0]) for row in conn.execute("SELECT id FROM memoria_persona WHERE session_id = ?",
                                                    (self.profile,)).fetchall()]

    def erase_rows(self, conn: Connection, ids: Sequence[int]) -> None:
        """Delete facts and their origins with no tombstone (forget, inside the caller's transaction)."""
        for persona_id in ids:
            conn.execute("DELETE FROM memoria_persona WHERE id = ? AND session_id = ?", (persona_id, self.profile))
            deleted_by_us(conn, self.profile, persona_id)

    def _linked_topic(self, conn: Connection, memory_id: str) -> str:
        """The topic of a preference or instruction linked to the memory, else the default topic."""
        tables = self._tables(conn)
        parts, params = [], []
        for order, (table, extra) in enumerate((("memoria_preferences", "AND COALESCE(evolution, '') != ?"),
                                                ("memoria_instructions", ""))):
            if table in tables:
                parts.append(f"SELECT topic, {order} AS source, id FROM {table} WHERE source_memory_id = ? "
                             f"AND COALESCE(TRIM(topic), '') != '' {extra}")
                params += [memory_id, TOMBSTONE_MARK] if extra else [memory_id]
        if not parts:
            return DEFAULT_TOPIC
        row = conn.execute(f"SELECT topic FROM ({' UNION ALL '.join(parts)}) AS linked ORDER BY source, id LIMIT 1",
                           params).fetchone()
        return str(row[0]).strip() if row is not None else DEFAULT_TOPIC

def fact_with_writer(row: Any) -> Fact:
    """A row of :data:`FACT_WITH_WRITER` as a fact that says who wrote it."""
    return Fact(**{name: row[name] for name in ROW_FIELDS}, writer=writer_of(row["born"], row["written_by"]),
                scope=row["scope"])

