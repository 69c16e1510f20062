"""Proposals: the older facts a write may update or merge with (``supersede.detect: propose``), kept until the writer
decides.

Table ``persona_proposals``: one row per (profile, old fact, new fact) the detector (:mod:`.supersede_rules`)
proposed, with its rule, its kind (``update``: the new fact replaces the old; ``merge``: the two say the same
thing, and ``new`` is the fuller, which may be the older fact) and, once there is one, the decision: ``accepted``
(the new fact superseded the old one, with lineage and undo, :func:`.supersede.accept`) or ``dismissed`` (both
stay; the row then keeps keyed
hashes of the two texts, :mod:`.forgotten`'s key, so the same pair is never proposed again, even when its facts
are added anew).
A proposal is *open* while undecided and both its facts are in the persona: one about a fact that was replaced,
demoted or forgotten is no longer open. Rows hold ids and keyed hashes, never text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from ..errors import InputError, NotFoundError
from ..text import normal_form
from . import stem_index
from .backend import Connection
from .births import BIRTH_JOIN
from .database import Database
from .fact_row import FACT_COLUMNS, Fact, Proposal, check_id
from .forgotten import digests, secret

if TYPE_CHECKING:
    from .verdict import Verdict

MAX_PER_WRITE = 3  # the strongest matches a write reports; more would be noise nobody reads
SOURCE_DATE_SLACK = timedelta(days=1)  # a source's date and a store's birth closer than this order nothing
IMPORT_BATCH = 500  # the added facts of an import read back per statement (a bound on memory, not a tuning)
ACCEPTED, DISMISSED = "accepted", "dismissed"
FACT_NAMES = [name.strip() for name in FACT_COLUMNS.split(",")]
# Whether the profile dismissed any proposal (only a dismissal keeps the texts' digests): an index seek, which a
# writer may ask beside its own reads, so a profile that never dismissed one skips :func:`_dismissed`'s read.
ANY_DISMISSAL = "SELECT 1 FROM persona_proposals WHERE session_id = :session AND old_digest IS NOT NULL LIMIT 1"
PROPOSAL_SQL = (
    "SELECT p.id, p.rule, p.proposed_at, p.decision, p.kind, "
    + ", ".join(f"o.{name} AS o_{name}" for name in FACT_NAMES) + ", "
    + ", ".join(f"n.{name} AS n_{name}" for name in FACT_NAMES)
    + " FROM persona_proposals p JOIN memoria_persona o ON o.id = p.old_id AND o.session_id = p.session_id "
    "JOIN memoria_persona n ON n.id = p.new_id AND n.session_id = p.session_id WHERE p.session_id = ? "
)


def propose(store: Database, conn: Connection, new: Fact, olds: Iterable[Fact] | None = None, *,
            own: frozenset[int] = frozenset(), dismissals: bool = True) -> tuple[Proposal, ...]:
    """After ``new`` was written: the older facts of its topic it may update or merge with, kept as open proposals,
    strongest first (caller's transaction). ``olds``: the candidates (default: those the stem index gives); those
    of ``own`` (written with ``new``, by one import) only where the evidence is explicit (:attr:`Verdict.named`).
    ``dismissals=False``: the caller read (:data:`ANY_DISMISSAL`) that the profile never dismissed a proposal."""
    if store.supersede_detect == "off":
        return ()
    from .supersede_rules import judge  # the rules load with the first write, not with every store

    candidates = stem_index.candidates(store, conn, new) if olds is None else olds
    # Within one scope only: a project's "uses pnpm" updates nothing global, it holds beside it (keys do the same).
    judged = _closest(store, new, _supported(sorted(((verdict, old) for old in _beside(candidates, new)
                                                     if (verdict := judge(old.content, new.content)).proposes
                                                     and (old.id not in own or verdict.named)),
                                                    key=lambda pair: (-pair[0].strength, pair[1].id))))
    pairs = [(verdict, *(_merged(old, new) if verdict.merge else (old, new))) for verdict, old in judged]
    made: list[Proposal] = []
    now = store.now()
    while pairs and len(made) < MAX_PER_WRITE:  # the strongest first; a dismissed pair lets the next one in
        batch, pairs = pairs[:MAX_PER_WRITE - len(made)], pairs[MAX_PER_WRITE - len(made):]
        dismissed = _dismissed(store, conn, [(shorter, fuller) for _, shorter, fuller in batch]) if dismissals \
            else set()
        made += _keep(store, conn, [pair for pair in batch if (pair[1].content, pair[2].content) not in dismissed], now)
    return tuple(made)


def _beside(facts: Iterable[Fact], new: Fact) -> list[Fact]:
    """The facts of ``new``'s topic (:func:`~pipeline.text.same_topic`) and scope, ``new`` aside; the topic's
    normal form made once, and not at all for a topic spelt as the new fact's (every candidate, mostly)."""
    topic = normal_form(new.topic)
    return [fact for fact in facts if fact.id != new.id and fact.scope == new.scope
            and (fact.topic == new.topic or normal_form(fact.topic) == topic)]


def _supported(judged: list[tuple[Verdict, Fact]]) -> list[tuple[Verdict, Fact]]:
    """No more than the evidence supports: where one candidate is named by a strong rule (the new fact names its
    value as left behind, or fills its slot with another), a weaker update beside it (a change word and the same
    topic) is noise in a full topic, and is left out; where none is, only the weak updates that share the most
    words with the new fact stay ("Switched to tennis; chess is boring" names the chess fact, not the journal
    beside it); merges stand on their own."""
    if not any(verdict.update and verdict.strong for verdict, _ in judged):
        best = max((verdict.strength for verdict, _ in judged if verdict.update), default=0)
        return [(verdict, old) for verdict, old in judged if not verdict.update or verdict.strength == best]
    return [(verdict, old) for verdict, old in judged if not verdict.update or verdict.strong]


def _closest(store: Database, new: Fact, judged: list[tuple[Verdict, Fact]]) -> list[tuple[Verdict, Fact]]:
    """Where the rules name two or more facts as updated by ``new``, and closeness in meaning is at hand
    (:mod:`.meaning`, the ``embed`` extra): only those about as close to it as the closest stay ("Moved to Malaga"
    updates "Lives in Zaragoza", not "Lives alone with two cats" beside it); merges stand on their own."""
    updates = [(verdict.rule, old) for verdict, old in judged if verdict.update]
    if len({rule for rule, _ in updates}) < 2:
        return judged  # one rule (several values of one slot, say): meaning has nothing to choose between
    from . import meaning

    if not meaning.enabled(store):
        return judged
    near = meaning.closest(store.profile, new.content, [(old.content, rule) for rule, old in updates])
    kept = {old.id for (_, old), close in zip(updates, near, strict=True) if close}
    return [(verdict, old) for verdict, old in judged if not verdict.update or old.id in kept]


def _merged(old: Fact, new: Fact) -> tuple[Fact, Fact]:
    """(the one a merge lets go, the fuller one it keeps), whichever was written first."""
    from .near_duplicates import fuller

    return (new, old) if fuller(old.content, new.content) else (old, new)


def check_write(store: Database, conn: Connection, new: Fact, *, dismissals: bool = True
                ) -> tuple[tuple[Proposal, ...], tuple[Fact, ...]]:
    """A write's proposals, and its related facts: its topic and scope's others, those it may update or merge with
    first, then the latest, up to ``supersede.related``. One read of candidates (the stem index's) for both.
    ``dismissals``: as :func:`propose`'s."""
    candidates = stem_index.candidates(store, conn, new)
    made = propose(store, conn, new, candidates, dismissals=dismissals)
    partners = {fact.id for proposal in made for fact in (proposal.old, proposal.new)}
    from .slots import closeness  # the write path's own reader, as the rules are

    mine = _beside(candidates, new)
    # The closest to the new fact first, so the fact it changes is in the writer's view however full the topic.
    mine.sort(key=lambda fact: (fact.id not in partners, -closeness(fact.content, new.content), -fact.id))
    return made, tuple(mine[:store.supersede_related])


def propose_after_import(store: Database, conn: Connection, added: Sequence[int], listed: set[int],
                         dated: dict[int, str] | None = None) -> list[Proposal]:
    """The facts an import added may update the profile's older facts, each judged against the candidates a write
    of it would be (bounded, :mod:`.stem_index`), never one of ``listed`` (a facts file lists them: current too).
    Among the import's own facts, in the source's order (the caller's: dates, lines, entries), only what names a
    value left behind or another value of a slot, or a merge: a source's facts were true together, mostly. The
    added facts are read back a batch at a time, so an import of many facts never holds them all again here.
    ``dated``: an added fact's date in its source (mem0's created_at): a stored fact born after it is the newer one,
    which may update it, never the reverse (an old export imported late inverts no change)."""
    if store.supersede_detect == "off" or not added:
        return []
    stem_index.catch_up(store, conn)  # the import's facts, indexed once here rather than at the next write
    own, made, open_topics = frozenset(added), list[Proposal](), _topics_beside(store, conn, listed)
    if not open_topics:
        return made  # nothing to judge an added fact against: none is read back
    for start in range(0, len(added), IMPORT_BATCH):
        batch = added[start:start + IMPORT_BATCH]
        found = {fact.id: fact for fact in _current(store, conn, batch)}
        for fact in (found[fact_id] for fact_id in batch if fact_id in found):
            if normal_form(fact.topic) not in open_topics:
                continue  # no fact it could be judged against: not even one to ask the index for
            olds = [old for old in stem_index.candidates(store, conn, fact, caught_up=True)
                    if old.id < fact.id and old.id not in listed]
            newer = _born_after(olds, (dated or {}).get(fact.id), own)
            made += propose(store, conn, fact, [old for old in olds if old.id not in newer], own=own)
            for old in (old for old in olds if old.id in newer):
                made += propose(store, conn, old, [fact])
    return made


def _topics_beside(store: Database, conn: Connection, listed: set[int]) -> set[str]:
    """The topics (in normal form) of the profile's facts outside ``listed``: only there can an imported fact find
    an older one to judge (a candidate of another topic, or listed, is never judged). One read for the import:
    a facts file that makes a profile asks the index nothing."""
    rows = conn.execute("SELECT id, topic FROM memoria_persona WHERE session_id = ?", (store.profile,)).fetchall()
    return {normal_form(row[1]) for row in rows if isinstance(row[1], str) and int(row[0]) not in listed}


def _born_after(olds: list[Fact], dated: str | None, own: frozenset[int]) -> set[int]:
    """The ids of the stored facts (not the import's own) born a day or more after ``dated``, the source's date
    of a fact. A birth is when the store took a fact in, not when its source said it (an import of this morning's
    file), and the two clocks differ: within a day, neither is the older."""
    from ..clock import from_db

    if dated is None:
        return set()
    when = from_db(dated) + SOURCE_DATE_SLACK
    return {old.id for old in olds if old.id not in own and from_db(old.created_at) > when}


def _current(store: Database, conn: Connection, ids: Sequence[int] | None = None, *,
             leaving: set[int] | frozenset[int] = frozenset()) -> list[Fact]:
    """The profile's facts a reader may see (all, or those of ``ids``), by id, but those of ``leaving`` (skipped
    before a fact is made of their row)."""
    among = "" if ids is None else f"AND p.id IN ({', '.join('?' * len(ids))}) "
    rows = conn.execute(f"SELECT {FACT_COLUMNS}, b.scope FROM memoria_persona p {BIRTH_JOIN} WHERE session_id = ? "
                        f"AND ({store.row_problem()}) IS NULL {among}ORDER BY id", (store.profile, *(ids or ())))
    return [Fact(**dict(row)) for row in rows if row["id"] not in leaving]


def scan_stored(store: Database, conn: Connection) -> list[Proposal]:
    """Look over the stored persona: each fact judged against the older facts of its topic the stem index gives
    for it, as if written now (caller's transaction): merges and changes among facts no single write saw, such as
    those another tool wrote, or an import's before issue 50. Bounded per fact as a write is."""
    if store.supersede_detect == "off":
        return []
    stem_index.catch_up(store, conn)
    made: list[Proposal] = []
    facts = _current(store, conn)
    for fact in facts:
        olds = [old for old in stem_index.candidates(store, conn, fact) if old.id < fact.id]
        made += propose(store, conn, fact, olds)
    return made + _merges_across(store, conn, facts)


def _merges_across(store: Database, conn: Connection, facts: list[Fact]) -> list[Proposal]:
    """With closeness in meaning (:mod:`.meaning`): the merges of facts two sources filed under two topics ("Tests
    use pytest" under tools, "Uses pytest for tests." under general): each fact's nearest older facts of other topics
    and its scope, judged by the rules, a merge alone proposed (an update across topics is no one's evidence)."""
    from . import meaning

    if not meaning.enabled(store) or len(facts) > meaning.SCAN_FACTS:
        return []
    from .supersede_rules import judge

    made: list[Proposal] = []
    for fact, near in zip(facts, meaning.neighbours(store.profile, [fact.content for fact in facts]), strict=True):
        olds = [facts[index] for index in near if facts[index].scope == fact.scope
                and normal_form(facts[index].topic) != normal_form(fact.topic)]
        pairs = [(verdict, *_merged(old, fact)) for old in olds if (verdict := judge(old.content, fact.content)).merge]
        dismissed = _dismissed(store, conn, [(shorter, fuller) for _, shorter, fuller in pairs])
        made += _keep(store, conn, [pair for pair in pairs if (pair[1].content, pair[2].content) not in dismissed],
                      store.now())
    return made


def open_proposals(store: Database, *, scan: bool = False) -> list[Proposal]:
    """The profile's open proposals, oldest first; with ``scan``, after :func:`scan_stored` in a transaction."""
    if scan:
        with store.transaction() as conn:
            scan_stored(store, conn)
    with store.read() as conn:
        store.note_read(conn, "proposals")
        rows = conn.execute(PROPOSAL_SQL + "AND p.decision IS NULL ORDER BY p.id", (store.profile,)).fetchall()
    return [_proposal(row) for row in rows]


def dismiss(store: Database, proposal_id: int) -> Proposal:
    """Both facts stay; the pair (by its texts) is never proposed again. (Accepting is a supersession:
    :func:`.supersede.accept`.)"""
    with store.transaction() as conn:
        proposal = open_proposal(store, conn, proposal_id)
        decide(store, conn, proposal, DISMISSED, _digests(store, conn, proposal.old, proposal.new))
    return proposal


def reopen(store: Database, conn: Connection, old_ids: Iterable[int], new_id: int) -> None:
    """An accepted proposal whose supersession was undone is open again (caller's transaction)."""
    for old_id in old_ids:
        conn.execute("UPDATE persona_proposals SET decision = NULL, decided_at = NULL WHERE session_id = ? "
                     "AND old_id = ? AND new_id = ? AND decision = ?", (store.profile, old_id, new_id, ACCEPTED))


def forget(store: Database, conn: Connection, ids: Iterable[int], texts: Iterable[str]) -> None:
    """Remove every proposal about the facts ``ids`` or the texts ``texts`` (forget; caller's transaction)."""
    ids = list(ids)
    for fact_id in ids:
        conn.execute("DELETE FROM persona_proposals WHERE session_id = ? AND (old_id = ? OR new_id = ?)",
                     (store.profile, fact_id, fact_id))
    stem_index.forget(store, conn, ids)
    for digest in digests(secret(store, conn), texts=texts):
        conn.execute("DELETE FROM persona_proposals WHERE session_id = ? AND (old_digest = ? OR new_digest = ?)",
                     (store.profile, digest, digest))


def forget_profile(store: Database, conn: Connection) -> None:
    """Remove every proposal of the profile, and its stem index (profile erase; caller's transaction)."""
    conn.execute("DELETE FROM persona_proposals WHERE session_id = ?", (store.profile,))
    stem_index.forget_profile(store, conn)


def _digests(store: Database, conn: Connection, old: Fact, new: Fact) -> tuple[str, str]:
    old_digest, new_digest = digests(secret(store, conn), texts=[old.content, new.content])
    return old_digest, new_digest


def _dismissed(store: Database, conn: Connection, pairs: Sequence[tuple[Fact, Fact]]) -> set[tuple[str, str]]:
    """The (old text, new text) of ``pairs`` the writer dismissed before: one read for all of them."""
    if not pairs:
        return set()
    texts = sorted({fact.content for pair in pairs for fact in pair})
    digest = dict(zip(texts, digests(secret(store, conn), texts=texts), strict=True))
    olds, news = {digest[old.content] for old, _ in pairs}, {digest[new.content] for _, new in pairs}
    rows = conn.execute(
        f"SELECT old_digest, new_digest FROM persona_proposals WHERE session_id = ? AND decision = ? AND old_digest "
        f"IN ({', '.join('?' * len(olds))}) AND new_digest IN ({', '.join('?' * len(news))})",
        (store.profile, DISMISSED, *olds, *news)).fetchall()
    found = {(str(row[0]), str(row[1])) for row in rows}
    return {(old.content, new.content) for old, new in pairs if (digest[old.content], digest[new.content]) in found}


def _keep(store: Database, conn: Connection, pairs: Sequence[tuple[Verdict, Fact, Fact]], now: str
          ) -> list[Proposal]:
    """The proposals of ``pairs`` (verdict, old, new), kept in one statement, in their order; a pair proposed before
    keeps its first proposal."""
    if not pairs:
        return []
    rows = conn.execute("INSERT INTO persona_proposals (session_id, old_id, new_id, rule, proposed_at, kind) VALUES "
                        + ", ".join("(?, ?, ?, ?, ?, ?)" for _ in pairs)
                        + " ON CONFLICT (session_id, old_id, new_id) DO NOTHING "
                        "RETURNING old_id, new_id, id, rule, proposed_at, kind",
                        [value for verdict, old, new in pairs
                         for value in (store.profile, old.id, new.id, verdict.rule, now, verdict.kind)]).fetchall()
    kept = {(int(row[0]), int(row[1])): row[2:] for row in rows}
    return [Proposal(int(row[0]), old, new, str(row[1]), str(row[2]), str(row[3])) for _, old, new in pairs
            for row in [kept.get((old.id, new.id)) or _proposed_before(store, conn, old, new)]]


def _proposed_before(store: Database, conn: Connection, old: Fact, new: Fact) -> Any:
    """(id, rule, proposed_at, kind) of the pair's first proposal, which stands."""
    return conn.execute("SELECT id, rule, proposed_at, kind FROM persona_proposals WHERE session_id = ? AND "
                        "old_id = ? AND new_id = ?", (store.profile, old.id, new.id)).fetchone()


def open_proposal(store: Database, conn: Connection, proposal_id: int) -> Proposal:
    """The open proposal ``proposal_id``, read inside the transaction that decides it, or one clear error."""
    check_id(proposal_id)
    row = conn.execute(PROPOSAL_SQL + "AND p.id = ?", (store.profile, proposal_id)).fetchone()
    if row is None:
        known = conn.execute("SELECT 1 FROM persona_proposals WHERE session_id = ? AND id = ?",
                             (store.profile, proposal_id)).fetchone()
        if known is None:
            raise NotFoundError(f"no proposal #{proposal_id} in profile {store.profile!r} (see `persona review`)")
        raise InputError(f"proposal #{proposal_id} is no longer open: one of its facts left the persona")
    if row["decision"] is not None:
        raise InputError(f"proposal #{proposal_id} was already {row['decision']}")
    return _proposal(row)


def decide(store: Database, conn: Connection, proposal: Proposal, decision: str,
           digests_: tuple[str | None, str | None] = (None, None)) -> None:
    """Record the decision on an open proposal (caller's transaction); a dismissal keeps the texts' hashes."""
    conn.execute("UPDATE persona_proposals SET decision = ?, decided_at = ?, old_digest = ?, new_digest = ? "
                 "WHERE session_id = ? AND id = ?", (decision, store.now(), *digests_, store.profile, proposal.id))


def _proposal(row: Any) -> Proposal:
    old = Fact(**{name: row[f"o_{name}"] for name in FACT_NAMES})
    new = Fact(**{name: row[f"n_{name}"] for name in FACT_NAMES})
    return Proposal(int(row["id"]), old, new, str(row["rule"]), str(row["proposed_at"]), str(row["kind"]))
