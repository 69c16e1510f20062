"""What the Hermes provider and the Hermes plugin share: settings for a Hermes home and user, and bound tools."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..config.load import load_settings
from ..config.schema import Settings
from ..errors import NoProfile
from ..fs.locations import hermes_home_override
from ..inject.views import Reader
from .tools import WRITE_TOOLS, PersonaTools, Tool, call_json, error_json, openai_schema

HERMES = "hermes"  # the agent a `host` scope names for Hermes (pipeline.scopes.HOSTS)
# Filled in by the surface, never by the model: a user reaches only their own persona.
BOUND = frozenset({"profile", "session", "session_id"})


# Every profile a Hermes request maps to is one of three disjoint shapes, so the mapping is one-to-one:
# a plain user id; ``user:`` + a user id that is the operator's profile or starts with a reserved prefix;
# ``key:`` + a gateway session key. A user id and a session key that spell the same string never share one.
USER_ESCAPE = "user:"
KEY_PREFIX = "key:"
RESERVED = (USER_ESCAPE, KEY_PREFIX)


class Identity(NamedTuple):
    """Who a Hermes request is for, as the gateway knows it: a user id, a gateway session key, or neither."""

    user_id: str = ""
    session_key: str = ""


def gateway_identity() -> Identity:
    """This request's identity from Hermes' gateway session context (the plugin's only way to learn it).

    The API server binds ``session_key`` to the client's X-Hermes-Session-Key,
    or, when the client sent none, to the Hermes session id; a key equal to
    the session id is therefore no key (that id is shared by clients whose
    conversations open alike, so it must never name a persona).
    """
    try:
        from gateway.session_context import get_session_env
    except Exception:  # outside Hermes' gateway: the environment, as Hermes' own fallback reads it
        def get_session_env(name: str, default: str = "") -> str:
            return os.environ.get(name, default)
    user = get_session_env("HERMES_SESSION_USER_ID", "") or ""
    key = get_session_env("HERMES_SESSION_KEY", "") or ""
    if key and key == (get_session_env("HERMES_SESSION_ID", "") or ""):
        key = ""
    return Identity(user, key)


def load_hermes_settings(hermes_home: str | os.PathLike[str] | None) -> Settings:
    """The settings file(s) of one Hermes home, as they are, before any user is named."""
    with hermes_home_override(hermes_home):
        return load_settings()


def hermes_reader(identity: Identity) -> Reader:
    """Who reads the persona in this Hermes session: the ``hermes`` agent, in the project of the session's working
    directory. A gateway serves users whose working directory is the server's, not theirs: no project."""
    if identity.user_id or identity.session_key:
        return Reader(HERMES)
    return Reader.at(HERMES, working_directory())


def working_directory() -> Path:
    """The agent's working directory as Hermes resolves it (its session override, ``TERMINAL_CWD``, else the
    process's); the same fallback outside Hermes."""
    try:
        from agent.runtime_cwd import resolve_agent_cwd

        return Path(resolve_agent_cwd())
    except Exception:  # not inside Hermes, or a Hermes without it
        raw = os.environ.get("TERMINAL_CWD", "").strip()
        return Path(raw).expanduser() if raw and Path(raw).expanduser().is_dir() else Path.cwd()


def hermes_settings(hermes_home: str | os.PathLike[str] | None, user_id: str | None = None, *,
                    session_key: str | None = None) -> Settings:
    """The user's settings as Hermes uses them: session-mode injection on, paths under Hermes' home.

    With ``hermes.profile: user_id`` or ``user_or_session_key`` the profile
    (store.profile) is the one :func:`hermes_profile` derives; raises
    NoProfile when the request names nobody.
    """
    settings = load_hermes_settings(hermes_home)
    profile = hermes_profile(settings, Identity(user_id or "", session_key or ""))
    return settings.model_copy(update={
        "injection": settings.injection.model_copy(update={"enabled": True, "mode": "session"}),
        "store": settings.store.model_copy(update={"profile": profile}),
    })


def hermes_profile(settings: Settings, who: Identity | str | None) -> str:
    """The one place a Hermes request becomes a profile.

    ``fixed``: ``store.profile`` for everyone. ``user_id``: the user's own
    profile. ``user_or_session_key``: the user's own profile when Hermes names
    a user (messaging platforms), else ``key:`` + the gateway session key (the
    API server's X-Hermes-Session-Key). A user id equal to the operator's
    profile (``store.profile``) or starting with ``user:`` or ``key:`` gets
    ``user:`` put in front, so no id reaches the operator's persona or
    another's. A request that names nobody gets no persona at all (NoProfile):
    an anonymous caller must never be served somebody else's facts.
    """
    owner, mode = settings.store.profile, settings.hermes.profile
    if mode == "fixed":
        return owner
    who = who if isinstance(who, Identity) else Identity(who or "")
    if who.user_id:
        profile = USER_ESCAPE + who.user_id if who.user_id == owner or who.user_id.startswith(RESERVED) \
            else who.user_id
    elif mode == "user_or_session_key" and who.session_key:
        profile = KEY_PREFIX + who.session_key
    else:
        names = "no user" if mode == "user_id" else "neither a user nor a gateway session key"
        raise NoProfile(f"hermes.profile is {mode} and this request names {names}, so it gets no persona")
    if profile == owner:  # only when store.profile itself starts with a reserved prefix
        raise NoProfile(f"this request would map to the operator's profile {owner!r} (store.profile); "
                        f"choose a store.profile that starts with neither {USER_ESCAPE!r} nor {KEY_PREFIX!r}")
    return profile


class BoundTools:
    """The persona tools for one Hermes session: schemas without the bound parameters, calls that fill them."""

    def __init__(self, settings: Settings, *, legacy_names: bool, writes: bool, project: str | None = None) -> None:
        self._tools: dict[str, Tool] = PersonaTools(lambda: settings, host=lambda: "hermes", agent="hermes",
                                                    project=lambda: project).catalog(legacy=legacy_names)
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


def no_settings() -> Any:
    """For tool schemas only: the tools never run with it."""
    raise RuntimeError("schemas only")


def current_home() -> str:
    """The Hermes home of the request being served: Hermes' own (context-local per-task profiles included),
    read when the request arrives, never cached at register() time."""
    try:
        from hermes_constants import get_hermes_home

        return str(get_hermes_home())
    except Exception:  # outside Hermes: the environment decides
        from ..fs.locations import hermes_home

        return str(hermes_home())
