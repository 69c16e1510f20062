"""What a tool answers: ``ok``, a write's ``changed`` (with when it takes effect), and what a write says about its
neighbourhood (the facts it may update or merge with, and the related facts of its topic and scope)."""

from __future__ import annotations

from typing import Any

from ..store import Fact, Proposal
from ..store.held_writes import HeldWrite

# When a change reaches the prompt: a session keeps its persona until its next compaction (the prompt
# cache), and a new session starts with the store as it is. A forget is the one exception (privacy first).
TAKES_EFFECT = "from the next compaction in this session, and at the start of every new session"


def ok(**fields: Any) -> dict[str, Any]:
    return {"status": "ok", **fields}


def changed(**fields: Any) -> dict[str, Any]:
    """A write's answer: it says when the change takes effect, so the model can tell the user."""
    return ok(**fields, takes_effect=TAKES_EFFECT)


def may_update(proposals: tuple[Proposal, ...]) -> dict[str, Any]:
    """What a write's answer says about the older facts it may update or merge with: each, and how to settle it.
    The model reads it and decides; the store supersedes nothing by itself."""
    if not proposals:
        return {}
    found = [{"proposal": p.id, "kind": p.kind, "persona_id": p.old.id, "topic": p.old.topic,
              "content": p.old.content, "fuller": p.new.id if p.kind == "merge" else None} for p in proposals]
    named = "; ".join(f"#{p.old.id}: {p.old.content}" for p in proposals)
    return {"may_update": found, "next": (
        f"This fact may update or repeat {named}. If it replaces one, or one says the same (kind merge: accepting "
        "keeps the fuller), call persona_review (action accept, its proposal) or persona_replace; if both stay "
        "true, persona_review (action dismiss), so the pair is not proposed again.")}


def related(facts: tuple[Fact, ...]) -> dict[str, Any]:
    """The write's neighbourhood: the facts of its topic and scope (supersede.related of them), ids and text."""
    return {"related": [{"persona_id": fact.id, "content": fact.content} for fact in facts]} if facts else {}


def awaiting(held: HeldWrite) -> dict[str, Any]:
    """A held write's answer (``writes.agents: ask``): nothing changed yet, and the model should tell the user."""
    return ok(held=held.name, awaiting_approval=True, write=held.to_dict(), next=(
        f"This {held.action} awaits the user's approval (held as {held.name}): nothing is in the persona until the "
        f"user accepts it with `persona review accept {held.name}` or on the page's Proposals. Tell the user."))
