"""What each button does: one store or schedule call, the very one the matching CLI command makes.

An action takes the settings, the profile's store and the submitted form, and returns the line the page shows
(never the fact's text: a note outlives the fact it names). A refusal is the same typed error the CLI prints.
Every write leaves the profile's targets rendered, as the CLI's do, and its line says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..config.schema import Settings
from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER
from ..errors import InputError
from ..fs.projects import identity_of
from ..schedule.after_write import render_after_write
from ..schedule.forget import forget as forget_everywhere
from ..scopes import HOSTS, host_scope, project_scope
from ..store import PersonaStore, Proposal, check_id
from ..text import counted

Form = Mapping[str, str]
Action = Callable[[Settings, PersonaStore, Form], str]


def number(form: Form, name: str) -> int:
    """A whole-number field (a fact's or a proposal's id), or the CLI's own refusal of a bad id."""
    text = form.get(name, "").strip()
    return check_id(int(text) if text.isdecimal() else text)


def optional(form: Form, name: str) -> str | None:
    return form.get(name, "").strip() or None


def _scope(form: Form) -> str | None:
    """The add form's scope: ``host:NAME``, ``project:IDENTITY`` (one of the user's projects), or global."""
    chosen = optional(form, "scope")
    if chosen is None:
        return None
    kind, _, value = chosen.partition(":")
    if kind == "host" and value in HOSTS:
        return host_scope(value)
    if kind == "project" and value.strip():
        try:
            return project_scope(identity_of(value, relative=False))
        except ValueError as error:
            raise InputError(str(error)) from None
    raise InputError(f"unknown scope {chosen!r}; give host:NAME (one of {', '.join(HOSTS)}), project:IDENTITY "
                     "or nothing (global)")


def _confidence(form: Form) -> float:
    text = form.get("confidence", "").strip() or str(DEFAULT_CONFIDENCE)
    try:
        return float(text)
    except ValueError:
        raise InputError(f"confidence {text!r} is not a number from 0 to 1") from None


def rendered(settings: Settings, store: PersonaStore) -> str:
    """After a write committed: the targets it left behind rendered once, said in the note (a target that could
    not be rendered is named there: the change stands)."""
    done = render_after_write(settings, store)
    return "; ".join([done.line(), *(f"warning: {warning}" for warning in done.warnings)])


def add(settings: Settings, store: PersonaStore, form: Form) -> str:
    done = store.add(form.get("content", ""), topic=form.get("topic", ""), tier=form.get("tier") or DEFAULT_TIER,
                     confidence=_confidence(form), reason=optional(form, "reason"), scope=_scope(form))
    said = f"added #{done.fact.id}" if done.created else f"already in the persona as #{done.fact.id}"
    if done.proposals:
        said += f"; {', '.join(_proposed(p) for p in done.proposals)} (see Proposals)"
    return f"{said}; {rendered(settings, store)}"


def _proposed(proposal: Proposal) -> str:
    if proposal.kind == "merge":
        return f"#{proposal.old.id} and #{proposal.new.id} may say the same (merge)"
    return f"it may update #{proposal.old.id}"


def replace(settings: Settings, store: PersonaStore, form: Form) -> str:
    done = store.replace(number(form, "id"), form.get("content", ""), topic=optional(form, "topic"),
                         tier=optional(form, "tier"), reason=optional(form, "reason"))
    return f"#{done.new.id} supersedes #{done.old.id} (undo it from its history); {rendered(settings, store)}"


def demote(settings: Settings, store: PersonaStore, form: Form) -> str:
    fact = store.demote(number(form, "id"), reason=optional(form, "reason"))
    return f"demoted #{fact.id}; a tombstone keeps it from coming back; {rendered(settings, store)}"


def forget(settings: Settings, store: PersonaStore, form: Form) -> str:
    persona_id = number(form, "id")
    done = forget_everywhere(settings, store, persona_id)
    said = (f"forgot #{persona_id}: {', '.join(version.label for version in done.erasure.versions)}; "
            f"{counted(len(done.rendered), 'target')} rendered again")
    said += "".join(f"; warning: {warning}" for warning in done.render_warnings)
    if done.still_holding:
        said += "; still holding it (edit or delete by hand): " + ", ".join(done.still_holding)
    if done.in_sources:
        said += "; the file it was imported from still holds it (edit it out by hand): " + ", ".join(done.in_sources)
    histories = done.host_histories
    if histories.files:
        said += f"; replaced it with [forgotten] in {counted(len(histories.files), 'host history file')}"
    if histories.left:
        said += "; hosts' histories still holding it: " + ", ".join(f"{f['path']} ({f['reason']})"
                                                                  for f in histories.left)
    if histories.short:
        said += ("; a fact this short is replaced only where it is a message's whole text, and these still hold "
                 "it inside other text: " + ", ".join(f["path"] for f in histories.short))
    if not histories.finished:
        said += "; `persona scrub` finishes the hosts' histories"
    if not done.erasure.scrubbed:
        said += "; a reader kept the write-ahead log from being emptied: run `persona scrub` once it is idle"
    return said


def undo_replace(settings: Settings, store: PersonaStore, form: Form) -> str:
    done = store.undo_replace(number(form, "id"))
    restored = ", ".join(f"#{fact.id}" for fact in done.restored)
    if done.removed is not None:
        said = f"restored {restored}; removed #{done.removed.id}"
    else:
        said = f"restored {restored}" + (f"; #{done.kept.id} stays" if done.kept is not None else "")
    return f"{said}; {rendered(settings, store)}"


def accept(settings: Settings, store: PersonaStore, form: Form) -> str:
    done = store.accept(number(form, "proposal"))
    return f"#{done.new.id} supersedes #{done.old.id} (proposal {done.id}); {rendered(settings, store)}"


def dismiss(settings: Settings, store: PersonaStore, form: Form) -> str:
    done = store.dismiss(number(form, "proposal"))
    return f"dismissed proposal {done.id}: #{done.old.id} and #{done.new.id} both stay"


def accept_write(settings: Settings, store: PersonaStore, form: Form) -> str:
    """An agent's held write (writes.agents: ask), made now as it asked."""
    held, _ = store.approve(form.get("held", ""))
    return f"accepted {held.name} ({held.action}, asked by {held.writer}); {rendered(settings, store)}"


def dismiss_write(settings: Settings, store: PersonaStore, form: Form) -> str:
    return f"dismissed {store.dismiss_held(form.get('held', '')).name}: nothing was written"


def lock(settings: Settings, store: PersonaStore, form: Form) -> str:
    """No agent tool may replace, demote, merge or forget the fact (`persona lock`); the page and CLI still may."""
    fact_id = number(form, "id")
    return f"#{fact_id} {'is now' if store.lock_fact(fact_id) else 'was already'} locked: no agent tool may change it"


def unlock(settings: Settings, store: PersonaStore, form: Form) -> str:
    fact_id = number(form, "id")
    return f"#{fact_id} {'is now' if store.unlock_fact(fact_id) else 'was already'} unlocked"


ACTIONS: dict[str, Action] = {
    "add": add, "replace": replace, "demote": demote, "forget": forget, "undo-replace": undo_replace,
    "accept": accept, "dismiss": dismiss, "accept-write": accept_write, "dismiss-write": dismiss_write,
    "lock": lock, "unlock": unlock,
}
