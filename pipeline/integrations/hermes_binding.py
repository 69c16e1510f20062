"""What the Hermes provider and the Hermes plugin share: settings for a Hermes home and user, and bound tools."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, cast

from .. import caches, inputs
from ..clock import Throttle
from ..config.load import load_settings
from ..config.schema import Settings
from ..errors import NoProfile
from ..fs.locations import hermes_home_override
from ..fs.projects import project_of
from ..hosts import registry
from ..inject.views import Reader
from .tools import WRITE_TOOLS, PersonaTools, Tool, call_json, error_json, openai_schema

PROJECT_RECHECK_MS = 5000  # a checkout's remote rarely changes; a session's project is fixed at its first snapshot
MAX_DIRECTORIES = 256  # working directories whose project is remembered
_PROJECTS = caches.cache("hermes_binding.projects", owner="process", key="a working directory",
                         bound=MAX_DIRECTORIES, holds_text=False)  # races between threads cost one extra look
HERMES = registry.HERMES  # the agent a `host` scope names for Hermes (pipeline.hosts)
# Filled in by the surface, never by the model: a user reaches only their own persona.
BOUND = frozenset({"profile", "session", "session_id"})


# Every profile a Hermes request maps to is one of three disjoint shapes, so the mapping is one-to-one:
# a plain user id; ``user:`` + a user id that is the operator's profile or starts with a reserved prefix;
# ``key:`` + a gateway session key. A user id and a session key that spell the same string never share one.
USER_ESCAPE = "user:"
KEY_PREFIX = "key:"
API_SERVER = "api_server"  # Hermes' platform name for its OpenAI-compatible HTTP front end
RESERVED = (USER_ESCAPE, KEY_PREFIX)


class Identity(NamedTuple):
    """Who a Hermes request is for, as the gateway knows it: a user id, a gateway session key, or neither."""

    user_id: str = ""
    session_key: str = ""


def gateway_identity() -> Identity:
    """This request's identity from Hermes' gateway session context (the plugin's only way to learn it).

    The API server binds ``session_key`` to the client's X-Hermes-Session-Key,
    or, when the client sent none, to the Hermes session id the run began
    with; a key equal to a session id of the run is therefore no key (that
    id is shared by clients whose conversations open alike, so it must never
    name a persona). A compaction inside the run gives Hermes a new session
    id, but not a new key: the key is then compared with the run's original
    session, which the API server also binds as the run's chat id and never
    rotates.
    """
    try:
        from gateway.session_context import get_session_env
    except Exception:  # outside Hermes' gateway: the environment, as Hermes' own fallback reads it
        def get_session_env(name: str, default: str = "") -> str:
            return inputs.environ(name) or default
    user = get_session_env("HERMES_SESSION_USER_ID", "") or ""
    key = get_session_env("HERMES_SESSION_KEY", "") or ""
    if key and key in _run_sessions(get_session_env):
        key = ""
    return Identity(user, key)


def _run_sessions(get_session_env: Any) -> set[str]:
    """The session ids of this run: the current one, and on the API server the one the run began with."""
    sessions = {get_session_env("HERMES_SESSION_ID", "") or ""}
    if (get_session_env("HERMES_SESSION_PLATFORM", "") or "") == API_SERVER:
        sessions.add(get_session_env("HERMES_SESSION_CHAT_ID", "") or "")
    return sessions - {""}


def load_hermes_settings(hermes_home: str | os.PathLike[str] | None) -> Settings:
    """The settings file(s) of one Hermes home, as they are, before any user is named."""
    with hermes_home_override(hermes_home):
        return load_settings()


def hermes_reader(identity: Identity) -> Reader:
    """Who reads the persona in this Hermes session: the ``hermes`` agent, in the project of the session's working
    directory. A gateway serves users whose working directory is the server's, not theirs: no project."""
    if identity.user_id or identity.session_key:
        return Reader(HERMES)
    return Reader(HERMES, project_at(working_directory()))


def project_at(directory: Path) -> str:
    """The project of ``directory``, looked up at most once per :data:`PROJECT_RECHECK_MS` per directory: the
    plugin asks on every request, and the walk up to ``.git`` and the read of its config are I/O the warm path
    must not pay. A directory's project is a fact of the filesystem, the same for every user and profile."""
    key = str(directory)
    found: tuple[str, Throttle] | None = _PROJECTS.get(key)
    if found is not None and not found[1].due():
        return found[0]
    looked = Throttle(PROJECT_RECHECK_MS)
    looked.looked()
    identity = project_of(directory).identity
    _PROJECTS.put(key, (identity, looked))
    return identity


def working_directory() -> Path:
    """The agent's working directory as Hermes resolves it (its session override, ``TERMINAL_CWD``, else the
    process's); the same fallback outside Hermes."""
    resolve = _hermes_cwd()
    if resolve is not None:
        try:
            return Path(resolve())
        except Exception:  # a Hermes whose resolver fails: the fallback below, as outside Hermes
            pass
    raw = (inputs.environ("TERMINAL_CWD") or "").strip()
    return inputs.expanded(Path(raw)) if raw and inputs.expanded(Path(raw)).is_dir() else Path.cwd()


@caches.memo("hermes_binding.hermes_cwd", owner="process", key="none: Hermes' own working-directory resolver", bound=1)
def _hermes_cwd() -> Callable[[], Any] | None:
    """Hermes' own resolver of the agent's working directory, looked up once (None outside Hermes)."""
    try:
        from agent.runtime_cwd import resolve_agent_cwd
    except Exception:  # not inside Hermes, or a Hermes without it
        return None
    return cast(Callable[[], Any], resolve_agent_cwd)


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
        self._tools: dict[str, Tool] = PersonaTools(lambda: settings, host=lambda: HERMES, agent=HERMES,
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
