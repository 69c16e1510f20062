"""Forgotten facts: ``persona_forgotten`` (keyed hashes), ``persona_secret`` (their key), ``persona_erasures``.

What remains of a forgotten fact is an HMAC-SHA256 of its text, in three forms,
and of its source memory id, keyed by a random secret of this database's own.
The text's forms: folded (case and spacing), its normal form
(:func:`pipeline.text.normal_form`: also Unicode form, invisible characters,
dashes and final punctuation) and its fact form (:func:`pipeline.text.fact_form`:
also quotes, emphasis, brackets, a bullet, emoji and the punctuation between
words, the one sense in which the render's dedupe calls two texts the same fact),
so no re-spelling or re-dressing of a forgotten fact comes back in. A text is
tested in all three, so the hashes earlier releases kept (the folded form, then
the normal form too) keep refusing what they refused. The text itself is gone;
the hash is enough to refuse the same memory when it is proposed, promoted or
added again. The key stays in the same
database, so the hashes are worthless outside it (a list of them cannot be
checked against guesses elsewhere); whoever holds the database can still test
a guess, as they could read the memory Mnemosyne keeps.

Each profile's erasure count (``persona_erasures``) only grows: a host checks
it, cheaply, to drop a pinned persona the moment a fact of it is forgotten.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable
from typing import Any

from .. import caches
from ..errors import ForgottenError, PersonaError
from ..fs import records
from ..text import fact_form, normal_form, undressed
from .backend import Connection
from .database import Database
from .identity import store_identity

# Each store's id as last read, by its label: what a store that cannot be read is known by in the records.
_STORE_IDS = caches.cache("forgotten.store_ids", owner="process", key="a store, by its label", bound=256,
                          holds_text=False)

SECRET_BYTES = 32
SECRET = "SELECT secret FROM persona_secret WHERE id = 1"
ForgottenTest = Callable[[str | None, str | None], bool]
REFUSED = "that fact was forgotten (persona forget); pass --force to take it in again"


def fold(text: str) -> str:
    """The form a text is hashed in: case and whitespace do not make a forgotten fact new."""
    return " ".join(str(text).casefold().split())


def same_fact(text: str) -> Callable[[object], bool]:
    """A test of another text: is it ``text`` in other case and spacing (what a forget took before the fact
    form), or in its fact form (:func:`pipeline.text.fact_form`: the same fact in another dress)?"""
    folded, words = fold(text), fact_form(text)

    def same(other: object) -> bool:
        return isinstance(other, str) and (fold(other) == folded or (bool(words) and fact_form(other) == words))
    return same


def secret(store: Database, conn: Connection) -> bytes:
    """This database's key, made on first use (inside the caller's transaction when it makes one). A key once
    made never changes, so the store keeps it after its first read: a write needs it several times."""
    if store.known_secret:
        return store.known_secret
    row = conn.execute(SECRET).fetchone()
    if row is None and not store.readonly:
        import secrets  # once per database: the key is made once

        conn.execute("INSERT INTO persona_secret (id, secret) VALUES (1, ?) ON CONFLICT DO NOTHING",
                     (secrets.token_hex(SECRET_BYTES),))
        row = conn.execute(SECRET).fetchone()
        store.secret_made_in = store.transactions
    key = bytes.fromhex(str(row[0])) if row is not None else b""
    if row is not None and store.secret_made_in != store.transactions:  # not one a rollback may yet undo
        store.known_secret = key
    return key


def digests(key: bytes, *, texts: Iterable[str] = (), memory_ids: Iterable[str | None] = ()) -> list[str]:
    """The keyed hashes of texts and of memory ids (kept apart by a prefix, so neither stands for the other)."""
    made = [f"text\x00{fold(text)}" for text in texts]
    made += [f"memory\x00{memory_id}" for memory_id in memory_ids if memory_id]
    return [hmac.digest(key, item.encode("utf-8", "surrogatepass"), "sha256").hex() for item in made]


def forgotten_digests(key: bytes, *, texts: Iterable[str] = (), memory_ids: Iterable[str | None] = ()) -> list[str]:
    """What a forgotten fact leaves, and what a text is tested by: :func:`digests`, and each text's normal and fact
    forms. A forget before the fact form left the folded and normal ones, and one before the normal form only the
    folded one: a test of all three finds those too."""
    texts = list(texts)
    made = []
    for text in texts:
        normal = normal_form(text)
        made.append(f"normal\x00{normal}")
        words = undressed(normal)
        if words:  # a text of no words (emoji alone, punctuation) is not every other such text
            made.append(f"fact\x00{words}")
    return digests(key, texts=texts, memory_ids=memory_ids) + [
        hmac.digest(key, item.encode("utf-8", "surrogatepass"), "sha256").hex() for item in made]


def record(store: Database, conn: Connection, found: list[str]) -> None:
    """Remember hashes as forgotten for the store's profile (inside the caller's transaction)."""
    for digest in found:
        conn.execute("INSERT INTO persona_forgotten (profile, digest, forgotten_at) VALUES (?, ?, ?) "
                     "ON CONFLICT DO NOTHING", (store.profile, digest, store.now()))


def count_erasure(store: Database, conn: Connection) -> None:
    """One more erasure of the profile: hosts that pinned its persona re-read it on their next check."""
    conn.execute("INSERT INTO persona_erasures (profile, erased) VALUES (?, 1) ON CONFLICT (profile) "
                 "DO UPDATE SET erased = persona_erasures.erased + 1", (store.profile,))
    # The store's erasure stamp: a process of ours that keeps fact text in memory (the MCP server, the Hermes
    # plugin) compares it before it answers, and drops what it kept when it moved (pipeline/caches.py).
    conn.execute(f"UPDATE persona_identity SET erased = {store.dialect.random_stamp} WHERE id = 1")


def erasure_stamp(store: Database) -> str | None:
    """The store's erasure stamp (None before the schema that made it): it changes with every forget of any
    profile, so a process that kept any profile's text knows to drop it. One primary-key read."""
    with store.read() as conn:
        row = conn.execute("SELECT erased FROM persona_identity WHERE id = 1").fetchone()
    return None if row is None else str(row[0])


def erasure_seen(store: Database) -> bool:
    """Compare the store's erasure stamp with the last one this process saw: when a forget anywhere (another
    process, another profile) moved it, every cache of this process that may hold a fact's text is cleared
    (:func:`pipeline.caches.erasure_seen`); True then. What a long-running process of ours asks before it answers.
    A store that cannot be read now is judged by the stamp its last forget left in this home's records
    (:func:`pipeline.fs.records.note_erasure`), so what was kept before that forget is never served in the
    meantime."""
    try:
        with store.read() as conn:
            found = store_identity(conn)
    except PersonaError:  # a store that cannot be read now: the caller's own read says why
        return _noted_erasure_seen(store.label)
    if found is None:
        return False
    _STORE_IDS.put(store.label, found[0])
    return caches.erasure_seen(store.label, found[1])


def _noted_erasure_seen(label: str) -> bool:
    store_id = _STORE_IDS.get(label)
    if store_id is None:
        return False  # never read: nothing of it was kept
    return caches.erasure_seen(label, records.erasure_noted(records.folder(), store_id))


def erasures(store: Database) -> int:
    """How many erasures the profile has seen (0 before its first): one indexed read."""
    with store.read() as conn:
        row = conn.execute("SELECT erased FROM persona_erasures WHERE profile = ?", (store.profile,)).fetchone()
    return 0 if row is None else int(row[0])


# Whether the profile ever forgot anything: a writer's read of it, beside its own reads.
ANY_FORGOTTEN = "SELECT 1 FROM persona_forgotten WHERE profile = :session LIMIT 1"


def nothing_forgotten(text: str | None, memory_id: str | None) -> bool:
    """The test of a profile that never forgot anything (its writer read so in a statement of its own)."""
    return False


def forgotten_test(store: Database, conn: Connection, asked: Any = None) -> ForgottenTest:
    """A test of (text, memory id): was either forgotten in this profile? One query, then pure hashing
    (``asked``: :func:`ask_forgotten`'s cursor, sent before with other statements)."""
    rows = (ask_forgotten(store, conn) if asked is None else asked).fetchall()
    known = {str(row[0]) for row in rows}
    if not known:
        return nothing_forgotten
    key = secret(store, conn)

    def test(text: str | None, memory_id: str | None) -> bool:
        return bool(known.intersection(forgotten_digests(key, texts=[text] if text else [],
                                                             memory_ids=[memory_id])))

    return test


def ask_forgotten(store: Database, conn: Connection) -> Any:
    """:func:`forgotten_test`'s statement, its answer unread (in a batched transaction, sent with the next read)."""
    return conn.execute("SELECT digest FROM persona_forgotten WHERE profile = ?", (store.profile,))


def ask_secret(store: Database, conn: Connection) -> Callable[[], None]:
    """This database's key asked for beside other statements (unless the store knows it); what it returns keeps
    the answer, if there is a key yet, for :func:`secret` (which makes one where there is none)."""
    if store.known_secret:
        return lambda: None
    asked = conn.execute(SECRET)

    def keep() -> None:
        row = asked.fetchone()
        if row is not None and store.secret_made_in != store.transactions:  # not one a rollback may yet undo
            store.known_secret = bytes.fromhex(str(row[0]))
    return keep


def admit(store: Database, conn: Connection, text: str | None, memory_id: str | None, *, force: bool,
          test: ForgottenTest | None = None) -> None:
    """Let ``text`` (and its source memory) into the profile's persona: ForgottenError when either was forgotten,
    unless ``force`` (the user, on purpose), which takes it back and drops its hashes. Every way a fact's text
    comes in passes here; ``test`` is a :func:`forgotten_test` the caller already read, for many texts at once."""
    if not (test or forgotten_test(store, conn))(text, memory_id):
        return
    if not force:
        raise ForgottenError(REFUSED)
    unforget(store, conn, text=text, memory_id=memory_id)


def is_forgotten(store: Database, conn: Connection, *, text: str | None = None, memory_id: str | None = None) -> bool:
    """Whether a text or memory of the profile was forgotten (``persona forget``)."""
    return forgotten_test(store, conn)(text, memory_id)


def unforget(store: Database, conn: Connection, *, text: str | None = None, memory_id: str | None = None) -> None:
    """Drop the hashes of a text and memory: the user added it again on purpose (``--force``)."""
    found = forgotten_digests(secret(store, conn), texts=[text] if text else [], memory_ids=[memory_id])
    for digest in found:
        conn.execute("DELETE FROM persona_forgotten WHERE profile = ? AND digest = ?", (store.profile, digest))
