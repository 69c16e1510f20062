"""The persona tools agents call, defined once for the MCP server and the Hermes provider.

Each tool is a typed function whose signature is its JSON schema (the MCP SDK
reads it directly; :func:`openai_schema` turns it into OpenAI function
format for Hermes). Tools return plain dicts and raise our typed errors;
each surface turns those errors into its own kind of tool error.
"""

import inspect
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from .errors import InputError
from .injector import PersonaInjector
from .runner import run_pipeline
from .sessions import SessionSnapshots
from .settings import Settings
from .store import PersonaStore
from .tokens import get_counter
from .triggers import status_data

TierName = Literal["permanent", "long_term", "working"]
Session = Annotated[str | None, Field(description="Session or profile id; default: the configured store.session.")]
PersonaId = Annotated[int, Field(description="Persona fact id, as returned by mnemosyne_persona_list.", ge=1)]
Reason = Annotated[str | None, Field(description="Why; kept with the fact or its tombstone.")]
Tool = Callable[..., dict[str, Any]]
WRITE_TOOLS = frozenset({
    "mnemosyne_persona_promote", "mnemosyne_persona_demote", "mnemosyne_persona_reinforce",
    "mnemosyne_persona_add", "mnemosyne_persona_render", "mnemosyne_persona_session_refresh",
})


class PersonaTools:
    """The tools, bound to a way of loading settings (read on every call, so edits are seen)."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self.settings = settings

    def store(self, session: str | None) -> PersonaStore:
        return PersonaStore.from_settings(self.settings(), session=session)

    def all(self) -> list[Tool]:
        """Every tool, in the order they are advertised."""
        return [
            self._promote(), self._demote(), self._list(), self._reinforce(), self._add(), self._render(),
            self._status(), self._inject_preview(), self._session_refresh(),
        ]

    def _promote(self) -> Tool:
        def mnemosyne_persona_promote(
            memory_id: Annotated[str, Field(description="Id of a working or episodic memory.", min_length=1)],
            tier: Annotated[TierName, Field(description="Persona tier.")] = "long_term",
            reason: Reason = None,
            force: Annotated[bool, Field(description="Promote even if the memory was demoted before.")] = False,
            session: Session = None,
        ) -> dict[str, Any]:
            """Promote a memory into the user's persona (durable behavioural facts). Idempotent."""
            with self.store(session) as store:
                result = store.promote(memory_id, tier=tier, reason=reason, force=force)
            return {"created": result.created, "fact": result.fact.to_dict()}

        return mnemosyne_persona_promote

    def _demote(self) -> Tool:
        def mnemosyne_persona_demote(persona_id: PersonaId, reason: Reason = None, session: Session = None
                                     ) -> dict[str, Any]:
            """Remove a persona fact, leaving a tombstone so it is not proposed again."""
            with self.store(session) as store:
                fact = store.demote(persona_id, reason=reason)
            return {"demoted": fact.to_dict()}

        return mnemosyne_persona_demote

    def _list(self) -> Tool:
        def mnemosyne_persona_list(
            tier: Annotated[TierName | None, Field(description="Only this tier.")] = None,
            topic: Annotated[str | None, Field(description="Only this topic.")] = None,
            session: Session = None,
        ) -> dict[str, Any]:
            """List persona facts: permanent first, then most reinforced."""
            with self.store(session) as store:
                facts = store.list(tier=tier, topic=topic)
            return {"facts": [fact.to_dict() for fact in facts], "count": len(facts)}

        return mnemosyne_persona_list

    def _reinforce(self) -> Tool:
        def mnemosyne_persona_reinforce(persona_id: PersonaId, session: Session = None) -> dict[str, Any]:
            """Record that a persona fact was confirmed again (resets its decay clock)."""
            with self.store(session) as store:
                return {"fact": store.reinforce(persona_id).to_dict()}

        return mnemosyne_persona_reinforce

    def _add(self) -> Tool:
        def mnemosyne_persona_add(
            content: Annotated[str, Field(description="The fact, e.g. 'Answers tersely.'", min_length=1)],
            topic: Annotated[str, Field(description="The section it belongs to, e.g. 'style'.", min_length=1)],
            tier: Annotated[TierName, Field(description="Persona tier.")] = "long_term",
            confidence: Annotated[float, Field(description="How sure, 0 to 1.", ge=0, le=1)] = 0.7,
            reason: Reason = None,
            session: Session = None,
        ) -> dict[str, Any]:
            """Add a persona fact directly. The same topic and text twice gives one fact."""
            with self.store(session) as store:
                result = store.add(content, topic=topic, tier=tier, confidence=confidence, reason=reason)
            return {"created": result.created, "fact": result.fact.to_dict()}

        return mnemosyne_persona_add

    def _render(self) -> Tool:
        def mnemosyne_persona_render(
            dry_run: Annotated[bool, Field(description="Render and report, but write nothing.")] = False,
            target: Annotated[str | None, Field(description="Only this target; default: every target.")] = None,
            session: Session = None,
        ) -> dict[str, Any]:
            """Regenerate the persona file(s) from the store and report tokens, sections and changes."""
            settings = self.settings()
            with self.store(session) as store:
                reports = run_pipeline(settings, store=store, targets=[target] if target else None,
                                       dry_run=dry_run, reason="mcp")
            return {"dry_run": dry_run, "targets": [report.to_dict() for report in reports]}

        return mnemosyne_persona_render

    def _status(self) -> Tool:
        def mnemosyne_persona_status(session: Session = None) -> dict[str, Any]:
            """Show the regeneration triggers, the last render and fact counts per tier."""
            with self.store(session) as store:
                return status_data(self.settings(), store)

        return mnemosyne_persona_status

    def _inject_preview(self) -> Tool:
        def mnemosyne_persona_inject_preview(
            session_id: Annotated[str | None, Field(description="Session id (used in session mode).")] = None,
        ) -> dict[str, Any]:
            """Show exactly what would be appended to the system prompt, and its token count."""
            settings = self.settings()
            injector = PersonaInjector(settings, session_id=session_id)
            try:
                block = injector.block()
            finally:
                injector.close()
            return {
                "enabled": settings.injection.enabled,
                "mode": settings.injection.mode,
                "appendix": injector.appendix(block),
                "block": block,
                "tokens": get_counter(settings.cap.counter).count(block),
                "budget": settings.target(settings.injection.target).budget,
            }

        return mnemosyne_persona_inject_preview

    def _session_refresh(self) -> Tool:
        def mnemosyne_persona_session_refresh(
            session_id: Annotated[str, Field(description="The session to refresh.", min_length=1)],
        ) -> dict[str, Any]:
            """Compaction-boundary refresh: re-record the session's persona only if the file changed."""
            with SessionSnapshots(self.settings()) as snapshots:
                return snapshots.refresh_at_compaction(session_id).to_dict()

        return mnemosyne_persona_session_refresh


def openai_schema(tool: Tool) -> dict[str, Any]:
    """The tool in OpenAI function format, from the same signature the MCP SDK reads."""
    fields: dict[str, Any] = {}
    for name, param in inspect.signature(tool).parameters.items():
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (param.annotation, default)
    model: type[BaseModel] = create_model(f"{tool.__name__}_args", **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    return {"name": tool.__name__, "description": inspect.getdoc(tool) or "", "parameters": schema}


def call(tools: dict[str, Tool], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Validate ``args`` against the tool's signature, then call it."""
    from pydantic import ValidationError

    if name not in tools:
        raise InputError(f"unknown tool {name!r}; known tools: {', '.join(sorted(tools))}")
    tool = tools[name]
    fields = {n: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
              for n, p in inspect.signature(tool).parameters.items()}
    model = create_model(f"{name}_args", __config__={"extra": "forbid"}, **fields)  # type: ignore[call-overload]
    try:
        validated = model.model_validate(args)
    except ValidationError as error:
        details = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg'].lower()}"
                            for e in error.errors())
        raise InputError(f"invalid arguments for {name}: {details}") from None
    return tool(**validated.model_dump())
