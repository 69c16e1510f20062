"""What the Hermes provider and the Hermes plugin share: settings for a Hermes home and user, and bound tools."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..config.load import load_settings
from ..config.schema import Settings
from ..fs.locations import hermes_home_override
from .tools import WRITE_TOOLS, PersonaTools, Tool, call_json, error_json, openai_schema

# Filled in by the surface, never by the model: a user reaches only their own persona.
BOUND = frozenset({"session", "session_id"})


def hermes_settings(hermes_home: str | os.PathLike[str] | None, user_id: str | None = None) -> Settings:
    """The user's settings as Hermes uses them: session-mode injection on, paths under Hermes' home.

    With ``hermes.profile: user_id`` the profile (store session) is the user
    Hermes names, so a gateway serving many users gives each their own persona.
    """
    with hermes_home_override(hermes_home):
        settings = load_settings()
    profile = user_id if settings.hermes.profile == "user_id" and user_id else settings.store.session
    return settings.model_copy(update={
        "injection": settings.injection.model_copy(update={"enabled": True, "mode": "session"}),
        "store": settings.store.model_copy(update={"session": profile}),
    })


class BoundTools:
    """The persona tools for one Hermes session: schemas without the bound parameters, calls that fill them."""

    def __init__(self, settings: Settings, *, legacy_names: bool, writes: bool) -> None:
        self._tools: dict[str, Tool] = PersonaTools(lambda: settings).catalog(legacy=legacy_names)
        self._writes = writes
        self.profile = settings.store.session

    def schemas(self) -> list[dict[str, Any]]:
        """The tools in OpenAI function format (read-only ones only, for an agent that may not write)."""
        return [openai_schema(tool, name=name, hidden=BOUND) for name, tool in self._tools.items()
                if self._writes or name not in WRITE_TOOLS]

    def names(self) -> list[str]:
        return [name for name in self._tools if self._writes or name not in WRITE_TOOLS]

    def handles(self, name: str) -> bool:
        return name in self._tools

    def call(self, name: str, args: Any, *, session_id: str) -> str:
        """Run a tool; always a JSON string in the tool contract's shape, never an exception."""
        if not self._writes and name in WRITE_TOOLS:
            return error_json(f"{name} changes the persona; only the primary agent may call it")
        bound: Mapping[str, Any] = {"session": self.profile, "session_id": session_id}
        return call_json(self._tools, name, args, bound)
