"""The persona tools agents call, defined once for the MCP server and the Hermes surfaces.

Each tool is a typed function whose signature is its JSON schema (the MCP SDK
reads it directly; :func:`openai_schema` turns it into OpenAI function
format for Hermes). Answers follow the contract of the existing tier's
adapter, so skills and scripts written against it keep working: every answer
has ``status`` (``"ok"``, or ``"error"`` with the message in ``error``); list
has ``count`` and ``personas``; promote has ``persona_id`` and ``tier``;
demote has ``demoted_to``. Extra keys are fine.

The canonical names are ``persona_*``. The existing tier's four names
(``mnemosyne_persona_promote`` ...) are aliases, offered where they cannot
collide with Mnemosyne's own tools.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from ..config.schema import Settings
from ..config.targets import resolve_target
from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER
from ..errors import InputError
from ..hosts import registry
from ..inject.injector import PersonaInjector
from ..render.tokens import get_counter
from ..schedule.triggers import status_data
from ..scopes import host_scope, project_scope
from ..stages.runner import run_pipeline
from ..store import PersonaStore, reach
from ..store.forgotten import erasure_seen
from ..store.held_writes import Action
from ..store.supersede import SAME_SCOPE
from ..tiers import Tier
from .tool_answers import awaiting, changed, may_update, ok, related
from .tool_calls import Tool, call, call_json, error_json, openai_schema
from .tool_params import PersonaId, Profile, Reason, Scope, ScopeKind, Session, not_a_bool

__all__ = ["CALLER", "ERASING_TOOLS", "WRITE_TOOLS", "PersonaTools", "Tool", "call", "call_json", "error_json",
           "openai_schema"]

log = logging.getLogger(__name__)
# The host a tool call comes from, where the surface learns it per call (an MCP client's name).
CALLER: ContextVar[str] = ContextVar("persona_tool_caller", default="unknown host")

LEGACY_ALIASES = {
    "mnemosyne_persona_promote": "persona_promote",
    "mnemosyne_persona_demote": "persona_demote",
    "mnemosyne_persona_list": "persona_list",
    "mnemosyne_persona_reinforce": "persona_reinforce",
}
WRITE_TOOLS = frozenset({
    "persona_promote", "persona_demote", "persona_reinforce", "persona_add", "persona_render",
    "persona_session_refresh", "persona_replace", "persona_forget", "persona_review", "mnemosyne_persona_promote",
    "mnemosyne_persona_demote",
    "mnemosyne_persona_reinforce",
})


ERASING_TOOLS = frozenset({"persona_forget"})  # their change reaches the very next request
class PersonaTools:
    """The tools, bound to a way of loading settings (read on every call, so edits are seen) and to the host they
    serve: what a tool writes is stamped ``tool:HOST`` by this code, never by the model."""

    def __init__(self, settings: Callable[[], Settings], *, host: Callable[[], str] | None = None,
                 agent: str = registry.MCP, project: Callable[[], str | None] | None = None) -> None:
        self.settings = settings
        self.host = host or CALLER.get
        self.agent = agent  # the host a `host` scope names (pipeline.scopes.HOSTS)
        self.project = project or (lambda: None)  # the session's project identity; None when not known

    def visible(self, scope: str | None) -> bool:
        """Whether a fact of ``scope`` belongs in this session: global, this agent's, or this session's project."""
        if scope is None or scope == host_scope(self.agent):
            return True
        project = self.project()
        return project is not None and scope == project_scope(project)

    def by_text(self, store: PersonaStore, old_text: str) -> int:
        """The one fact of this session's scopes whose text holds ``old_text``: another project's fact is not
        this session's to name by its words (InputError for none or several, as the store says it)."""
        found = [fact for fact in store.list() if self.visible(fact.scope) and old_text.strip() in fact.content]
        if len(found) != 1:
            named = ", ".join(f"#{fact.id}" for fact in found[:5])
            raise InputError(f"{len(found)} persona facts of this session's scopes contain that text"
                             + (f" ({named}); give more of it, or an id" if found else ""))
        return found[0].id

    def scope(self, kind: ScopeKind | None) -> str | None:
        """The stored scope a tool's ``scope`` argument names (None: global); InputError for a project scope when
        the session's working directory is not known (a gateway user, an MCP client without roots)."""
        if kind is None or kind == "global":
            return None
        if kind == "host":
            return host_scope(self.agent)
        project = self.project()
        if project is None:
            raise InputError("scope project needs the session's working directory, and this host did not give one "
                             "(a gateway chat, or an MCP client without roots); use scope global, or add the fact "
                             "with `persona add --project DIR`")
        return project_scope(project)

    def store(self, profile: str | None, session: str | None = None, *, readonly: bool = False) -> PersonaStore:
        """The store of ``profile`` (``session`` is its deprecated name), opened for one call: before the call answers,
        a forget another process made is seen (:func:`~pipeline.store.forgotten.erasure_seen`), so no cache of this
        one (an MCP server, a Hermes plugin) still holds the text."""
        store = PersonaStore.from_settings(self.settings(), profile=profile, session=session, readonly=readonly,
                                           writer=f"tool:{self.host()}")
        try:
            erasure_seen(store)
        except BaseException:
            store.close()
            raise
        return store

    def held(self, store: PersonaStore, action: Action, **write: Any) -> dict[str, Any] | None:
        """Under ``writes.agents: ask``: the write held for the user's approval, and the answer that says so."""
        return awaiting(store.hold(action, **write)) if self.settings().writes.agents == "ask" else None

    def rendered(self, store: PersonaStore) -> dict[str, Any]:
        """After a write committed: the targets it left behind, rendered once (a running session's snapshot
        stays until its compaction); what could not be rendered is a warning in the answer, never an error."""
        from ..schedule.after_write import render_after_write

        return render_after_write(self.settings(), store).to_dict()

    def all(self) -> list[Tool]:
        """Every tool under its canonical name, in the order they are advertised."""
        return [
            self._promote(), self._demote(), self._list(), self._reinforce(), self._add(), self._render(),
            self._status(), self._inject_preview(), self._session_refresh(), self._replace(),
            self._forget(), _review_tool(self),
        ]

    def catalog(self, *, legacy: bool) -> dict[str, Tool]:
        """Name -> tool; with ``legacy``, also the existing tier's four names."""
        tools = {tool.__name__: tool for tool in self.all()}
        if legacy:
            tools.update({alias: tools[name] for alias, name in LEGACY_ALIASES.items()})
        return tools

    def _promote(self) -> Tool:
        def persona_promote(
            memory_id: Annotated[str, Field(description="Id of a working or episodic memory.", min_length=1)],
            tier: Annotated[Tier, Field(description="Persona tier.")] = DEFAULT_TIER,
            reason: Reason = None,
            force: Annotated[bool, Field(description="Promote even if the memory was demoted before.")] = False,
            profile: Profile = None, session: Session = None,
        ) -> dict[str, Any]:
            """Promote a memory into the user's persona (durable behavioural facts). Idempotent. The answer's related
            lists the facts of the same topic: if the promoted fact changes one, persona_replace it; if it repeats
            one, merge them (persona_review accept the merge proposal, or persona_replace the shorter with the
            fuller text)."""
            with self.store(profile, session) as store:
                if held := self.held(store, "promote", memory_id=memory_id, tier=tier, reason=reason, force=force):
                    return held
                result = store.promote(memory_id, tier=tier, reason=reason, force=force)
                rendered = self.rendered(store)
            fact = result.fact
            return changed(persona_id=fact.id, tier=fact.tier, topic=fact.topic, created=result.created,
                           fact=fact.to_dict(), **may_update(result.proposals), **related(result.related), **rendered)

        return persona_promote

    def _demote(self) -> Tool:
        def persona_demote(persona_id: PersonaId, reason: Reason = None, profile: Profile = None,
                           session: Session = None) -> dict[str, Any]:
            """Use when a persona fact is no longer true and nothing replaces it ("I don't do that any more"): removes
            it, leaving a tombstone so it is not proposed again. When the user states what is true instead, use
            persona_replace; to erase it entirely, persona_forget."""
            with self.store(profile, session) as store:
                store.check_unlocked([persona_id], doing="demote")
                if held := self.held(store, "demote", persona_id=persona_id, reason=reason):
                    return held
                fact = store.demote(persona_id, reason=reason)
                rendered = self.rendered(store)
            return changed(persona_id=fact.id, demoted_to="memoria_preferences", fact=fact.to_dict(), **rendered)

        return persona_demote

    def _list(self) -> Tool:
        def persona_list(
            tier: Annotated[Tier | None, Field(description="Only this tier.")] = None,
            topic: Annotated[str | None, Field(description="Only this topic.")] = None,
            profile: Profile = None, session: Session = None,
        ) -> dict[str, Any]:
            """List persona facts: permanent first, then most reinforced. Those of this agent and this session's
            project are listed with the global ones; another project's or agent's are not."""
            with self.store(profile, session, readonly=True) as store:
                facts = [fact for fact in store.list(tier=tier, topic=topic) if self.visible(fact.scope)]
            return ok(count=len(facts), personas=[fact.to_dict() for fact in facts])

        return persona_list

    def _reinforce(self) -> Tool:
        def persona_reinforce(persona_id: PersonaId, profile: Profile = None,
                              session: Session = None) -> dict[str, Any]:
            """Use when the user confirms a persona fact again (says or shows it is still true): counts one more
            reinforcement, raises its confidence and resets its decay clock. Not for a changed fact: persona_replace."""
            with self.store(profile, session) as store:
                fact = store.reinforce(persona_id)
                rendered = self.rendered(store)
            return changed(persona_id=fact.id, reinforced=True, reinforcement_count=fact.reinforcement_count,
                           fact=fact.to_dict(), **rendered)

        return persona_reinforce

    def _add(self) -> Tool:
        def persona_add(
            content: Annotated[str, Field(description="The fact, e.g. 'Answers tersely.'", min_length=1)],
            topic: Annotated[str, Field(description="The section it belongs to, e.g. 'style'.", min_length=1)],
            tier: Annotated[Tier, Field(description="Persona tier.")] = DEFAULT_TIER,
            confidence: Annotated[float, Field(description="How sure, 0 to 1.", ge=0, le=1)] = DEFAULT_CONFIDENCE,
            reason: Reason = None,
            force: Annotated[bool, Field(description="Add it even if the same fact was demoted before.")] = False,
            scope: Scope = None,
            profile: Profile = None, session: Session = None,
        ) -> dict[str, Any]:
            """Use for a new durable fact about the user (a lasting preference, rule or circumstance, not a passing
            task detail). The same topic and text twice gives one fact. When the user corrects or changes a fact
            the persona already holds, use persona_replace instead, so the old one does not stay beside it. If the
            answer lists facts this one may update or merge with (may_update), judge each: persona_replace or
            persona_review accept when it changed or repeats, persona_review dismiss when both stay true. Its
            related lists the topic's other facts: replace one this fact changes, merge one it repeats. Give scope
            project for a rule about this repository only, host for one about this agent only; leave it out for
            what is true of the user everywhere."""
            where = self.scope(scope)
            with self.store(profile, session) as store:
                if held := self.held(store, "add", content=content, topic=topic, tier=tier, confidence=confidence,
                                     reason=reason, force=force, scope=where):
                    return held
                result = store.add(content, topic=topic, tier=tier, confidence=confidence, reason=reason,
                                   force=force, scope=where)
                rendered = self.rendered(store)
            fact = result.fact
            return changed(persona_id=fact.id, tier=fact.tier, topic=fact.topic, created=result.created,
                           fact=fact.to_dict(), **may_update(result.proposals), **related(result.related), **rendered)

        return persona_add

    def _render(self) -> Tool:
        def persona_render(
            dry_run: Annotated[bool, Field(description="Render and report, but write nothing.")] = False,
            target: Annotated[str | None, Field(description="Only this target; default: every target.")] = None,
            profile: Profile = None, session: Session = None,
        ) -> dict[str, Any]:
            """Regenerate the persona file(s) from the store and report tokens, sections and changes."""
            settings = self.settings()
            with self.store(profile, session, readonly=dry_run) as store:
                reports = run_pipeline(settings, store=store, targets=[target] if target else None,
                                       dry_run=dry_run, reason="tool")
            return ok(dry_run=dry_run, targets=[report.to_dict() for report in reports])

        return persona_render

    def _status(self) -> Tool:
        def persona_status(profile: Profile = None, session: Session = None) -> dict[str, Any]:
            """Show the regeneration triggers, the last render and fact counts per tier."""
            with self.store(profile, session, readonly=True) as store:
                return ok(**status_data(self.settings(), store))

        return persona_status

    def _inject_preview(self) -> Tool:
        def persona_inject_preview(
            session_id: Annotated[str | None, Field(description="Host session id (used in session mode).")] = None,
        ) -> dict[str, Any]:
            """Show exactly what would be appended to the system prompt, and its token count."""
            settings = self.settings()
            injector = PersonaInjector(settings, session_id=session_id)
            try:
                block = injector.block()
            finally:
                injector.close()
            return ok(enabled=settings.injection.enabled, mode=settings.injection.mode,
                      appendix=injector.appendix(block), block=block,
                      tokens=get_counter(settings.cap.counter).count(block),
                      budget=resolve_target(settings, settings.injection.target).budget)

        return persona_inject_preview

    def _forget(self) -> Tool:
        return _forget_tool(self)

    def _session_refresh(self) -> Tool:
        def persona_session_refresh(
            session_id: Annotated[str, Field(description="The host session to refresh.", min_length=1)],
        ) -> dict[str, Any]:
            """Compaction-boundary refresh: re-record the session's persona only if the file changed."""
            from ..inject.sessions import SessionSnapshots

            with SessionSnapshots(self.settings()) as snapshots:
                return ok(**snapshots.refresh_at_compaction(session_id).to_dict())

        return persona_session_refresh

    def _replace(self) -> Tool:
        def persona_replace(
            content: Annotated[str, Field(description="What is true now, as a whole fact.", min_length=1)],
            persona_id: Annotated[int | None, BeforeValidator(not_a_bool), Field(
                description="The fact that changed, as returned by persona_list.", ge=1, lt=2**63)] = None,
            old_text: Annotated[str | None, Field(description="Instead of persona_id: a piece of the old fact's "
                                                  "text that only it contains.", min_length=1)] = None,
            reason: Reason = None,
            force: Annotated[bool, Field(description="Take in text the user had forgotten, only when they ask to "
                                               "have it back.")] = False,
            scope: Annotated[ScopeKind | None, Field(description=(
                "Only to move the fact: global, project (this session's project) or host (this agent); by "
                "default the new fact keeps the old one's scope."))] = None,
            profile: Profile = None, session: Session = None,
        ) -> dict[str, Any]:
            """Use when the user corrects a persona fact or says it changed ("I moved to Berlin", "I use pnpm now"):
            the new fact supersedes the old one, which leaves the persona (undo: `persona undo-replace`). Name the
            old fact by persona_id, or by old_text, a unique piece of its text. If it is simply no longer true,
            use persona_demote; to erase it entirely, persona_forget."""
            if (persona_id is None) == (old_text is None):
                raise InputError("give the old fact's persona_id or a piece of its old_text, not both")
            where = SAME_SCOPE if scope is None else self.scope(scope)
            with self.store(profile, session) as store:
                target = persona_id if persona_id is not None else self.by_text(store, str(old_text))
                store.check_unlocked([target], doing="replace")
                if held := self.held(store, "replace", persona_id=target, content=content, reason=reason, force=force,
                                     scope=None if where is SAME_SCOPE else where or "global"):
                    return held
                result = store.replace(target, content, reason=reason, force=force, scope=where)
                rendered = self.rendered(store)
            return changed(persona_id=result.new.id, superseded=result.old.id, fact=result.new.to_dict(),
                           old=result.old.to_dict(), **rendered)

        return persona_replace


def _forget_tool(tools: PersonaTools) -> Tool:
    def persona_forget(persona_id: PersonaId, profile: Profile = None, session: Session = None) -> dict[str, Any]:
        """Forget a fact for real when the user asks you to delete something about them ("forget that"): every
        version of it (earlier ones it replaced, demoted ones, any fact with the same text) goes from the store,
        every session snapshot and every rendered file, from the very next request; `versions` lists each one
        erased, so tell the user. Only a keyed hash remains, so it is never taken in again unless the user asks.
        Use demote instead for a fact that is merely wrong or outdated."""
        from ..schedule.forget import forget

        with tools.store(profile, session) as store:  # the forget clears this process's text caches too
            with store.read() as conn:  # every version a forget would erase: none of them may be locked
                store.check_unlocked(reach(store, conn, persona_id), doing="forget")
            done = forget(tools.settings(), store, persona_id)
        return ok(persona_id=persona_id, forgotten=True, **done.to_dict())

    return persona_forget


def _review_tool(tools: PersonaTools) -> Tool:
    def persona_review(
        action: Annotated[Literal["list", "accept", "dismiss"], Field(
            description="list the open proposals (kind update or merge); accept one (an update: its newer fact "
                        "replaces the older; a merge: the fuller is kept); dismiss one (both stay).")] = "list",
        proposal: Annotated[int | None, BeforeValidator(not_a_bool), Field(
            description="accept, dismiss: the proposal's id, from may_update or the list.", ge=1, lt=2**63)] = None,
        profile: Profile = None, session: Session = None,
    ) -> dict[str, Any]:
        """Use to settle the facts a write said it may update (may_update in persona_add's answer): list the open
        proposals; accept one when the newer fact replaces the older (the older leaves the persona; undo:
        `persona undo-replace`); dismiss one when both stay true, so the pair is never proposed again."""
        if (proposal is None) != (action == "list"):
            raise InputError("accept and dismiss take a proposal id; list takes none")
        if proposal is None:
            with tools.store(profile, session, readonly=True) as store:
                scopes = {fact.id: fact.scope for fact in store.list()}
                found = [item for item in store.proposals()
                         if tools.visible(scopes.get(item.old.id)) and tools.visible(scopes.get(item.new.id))]
            return ok(count=len(found), proposals=[item.to_dict() for item in found])
        with tools.store(profile, session) as store:
            if action == "dismiss":
                done = store.dismiss(proposal)
                return ok(proposal=done.id, dismissed=True, kept=[done.old.id, done.new.id])
            for item in store.proposals():  # the fact an accept lets go (a merge's shorter) may be locked
                if item.id == proposal:
                    store.check_unlocked([item.old.id], doing="merge" if item.kind == "merge" else "replace")
            if tools.settings().writes.agents == "ask":  # the proposal stays open, for the user
                return ok(proposal=proposal, awaiting_approval=True, next=f"the user accepts it with `persona review "
                          f"accept {proposal}` or on the page's Proposals")
            done = store.accept(proposal)
            rendered = tools.rendered(store)
        return changed(proposal=done.id, persona_id=done.new.id, superseded=done.old.id, fact=done.new.to_dict(),
                       old=done.old.to_dict(), **rendered)

    return persona_review
