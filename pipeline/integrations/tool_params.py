"""The parameters the persona tools share, each typed once: its JSON schema (the MCP SDK and Hermes read it) and
its checks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field


def not_a_bool(value: Any) -> Any:
    """A whole number, never a JSON boolean: pydantic would take true as 1, naming another fact."""
    if isinstance(value, bool):  # JSON true is not id 1
        raise ValueError("expected a whole number, not true or false")
    return value


Profile = Annotated[str | None, Field(description="Whose persona: a profile id; default: store.profile.")]
Session = Annotated[str | None, Field(description="Deprecated: the old name of profile.")]
PersonaId = Annotated[int, BeforeValidator(not_a_bool),
                      Field(description="Persona fact id, as returned by persona_list.", ge=1, lt=2**63)]
Reason = Annotated[str | None, Field(description="Why; kept with the fact or its tombstone.")]
ScopeKind = Literal["global", "project", "host"]
Scope = Annotated[ScopeKind | None, Field(description=(
    "Where the fact holds. global (the default): true of the user everywhere ('answers tersely'). project: a rule "
    "about this repository or project only ('this repo uses pnpm, never npm'), the project of the session's "
    "working directory. host: only for this agent ('in this tool, never run the terminal without asking')."))]
