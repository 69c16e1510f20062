"""What the Hermes provider and the Hermes plugin share: settings for a Hermes home and user, and bound tools."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..config.load import load_settings
from ..config.schema import Settings
from ..errors import NoProfile
from ..fs.locations import hermes_home_override
from .tools import WRITE_TOOLS, PersonaTools, Tool, call_json, error_json, openai_schema

# Filled in by the surface, never by the model: a user reaches only their own persona.
BOUND = frozenset({"profile", "session", "session_id"})


# A user id that would reach the operator's profile, or that starts with this, gets it put in front, so
# user "default" is never the operator's "default" and the mapping stays one-to-one.
USER_ESCAPE = "user:"


def load_hermes_settings(hermes_home: str | os.PathLike[str] | None) -> Settings:
    """The settings file(s) of one Hermes home, as they are, before any user is named."""
    with hermes_home_override(hermes_home):
        return load_settings()


def hermes_settings(hermes_home: str | os.PathLike[str] | None, user_id: str | None = None) -> Settings:
    """The user's settings as Hermes uses them: session-mode injection on, paths under Hermes' home.

    With ``hermes.profile: user_id`` the profile (store.profile) is the user
    Hermes names (:func:`hermes_profile`); raises NoProfile when it names none.
    """
    settings = load_hermes_settings(hermes_home)
    return settings.model_copy(update={
        "injection": settings.injection.model_copy(update={"enabled": True, "mode": "session"}),
        "store": settings.store.model_copy(update={"profile": hermes_profile(settings, user_id)}),
    })


def hermes_profile(settings: Settings, user_id: str | None) -> str:
    """The one place a Hermes request becomes a profile.

    ``fixed``: ``store.profile`` for everyone. ``user_id``: the user's own
    profile; an id equal to the operator's profile (``store.profile``) or
    starting with ``user:`` gets ``user:`` put in front, so no user id reaches
    the operator's persona or another user's. A request that names no user
    gets no persona at all (NoProfile): an anonymous caller must never be
    served somebody else's facts.
    """
    owner = settings.store.profile
    if settings.hermes.profile != "user_id":
        return owner
    if not user_id:
        raise NoProfile("hermes.profile is user_id and this request names no user, so it gets no persona")
    profile = USER_ESCAPE + user_id if user_id == owner or user_id.startswith(USER_ESCAPE) else user_id
    if profile == owner:  # only when store.profile itself starts with the escape
        raise NoProfile(f"user {user_id!r} would map to the operator's profile {owner!r} (store.profile); "
                        f"choose a store.profile that does not start with {USER_ESCAPE!r}")
    return profile


class BoundTools:
    """The persona tools for one Hermes session: schemas without the bound parameters, calls that fill them."""

    def __init__(self, settings: Settings, *, legacy_names: bool, writes: bool) -> None:
        self._tools: dict[str, Tool] = PersonaTools(lambda: settings).catalog(legacy=legacy_names)
        self._writes = writes
        self.profile = settings.store.profile

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
        bound: Mapping[str, Any] = {"profile": self.profile, "session": None, "session_id": session_id}
        return call_json(self._tools, name, args, bound)
