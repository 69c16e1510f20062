"""The persona tier as a general Hermes plugin, beside whatever memory provider the user runs.

Hermes runs one memory provider (usually Mnemosyne), so this plugin does not
take that slot. It reaches the system prompt through the only general-plugin
seam that can, the ``llm_request`` middleware, and adds the persona tools
with ``register_tool`` under ``persona_*`` names that cannot collide with
Mnemosyne's.

General plugins get no compaction hook, so a compaction is read from the
request itself: the compaction-summary message changed. The session's
snapshot is refreshed then, and only then; every other request carries the
same bytes, so the prompt cache survives. When Mnemosyne injects the same
file itself, its copy is replaced in place (:mod:`.hermes_mnemosyne`). The Hermes home is looked up per
request (Hermes can serve several profiles in one process), and with
``hermes.profile: user_id`` so is the user.

Where Hermes renders plugin prompt sections (0.22 and later), the persona is
that section instead (:mod:`.hermes_section`) and the middleware adds no
block of its own; with a per-user profile the section stays empty and the
middleware delivers, as here.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from ..clock import Throttle
from ..errors import NoProfile, PersonaError
from ..inject.prompt import appendix
from ..inject.sessions import SessionSnapshots
from ..inject.views import Reader
from ..warn_once import ProblemLog
from .hermes_binding import (
    BOUND,
    HERMES,
    BoundTools,
    current_home,
    gateway_identity,
    hermes_reader,
    hermes_settings,
    no_settings,
)
from .hermes_mnemosyne import injected_file, same_file, with_persona_once
from .hermes_request import (
    UnknownShape,
    compaction_marker,
    conversation_fingerprint,
    is_continuation,
    map_system_text,
    message_digests,
    summary_is_last,
    with_system_text,
    without_tools,
)
from .hermes_section import PersonaSection, erasures_seen, without_copy
from .hermes_state import (
    Caller,
    ErasureCheck,
    Opening,
    PluginState,
    Profile,
    Request,
    Seen,
    SessionKey,
)
from .tools import ERASING_TOOLS, WRITE_TOOLS, PersonaTools, error_json, openai_schema

__all__ = ["PersonaPlugin", "compaction_marker", "register", "snapshot_id", "with_system_text"]

log = logging.getLogger(__name__)
PLUGIN_NAME = "persona"
TOOLSET = "persona"


def snapshot_id(home: str, session_id: str) -> str:
    """The id a session's snapshot is stored under: Hermes' session id, qualified by the Hermes home, so two
    homes sharing a store (and reusing a session id, as the API server does) never share a snapshot."""
    return f"{session_id}@{hashlib.sha256(home.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


class PersonaPlugin:
    """The middleware and the tools, over one :class:`~.hermes_state.PluginState`; safe from any thread."""

    def __init__(self) -> None:
        self.state = PluginState()
        self._problems = ProblemLog(log)
        self._shapes = ProblemLog(log)  # never "recovered": one warning per request shape we leave alone
        self.section = PersonaSection(self._profile, self._record_section)

    def register(self, ctx: Any) -> None:
        """Hermes' entry point: the prompt section where the host has one, the middleware and the persona tools."""
        self.section.register(ctx)
        ctx.register_middleware("llm_request", self.on_llm_request)
        for name, tool in PersonaTools(no_settings).catalog(legacy=False).items():
            schema = openai_schema(tool, name=name, hidden=BOUND)
            ctx.register_tool(name=name, toolset=TOOLSET, schema=schema, handler=self._handler(name),
                              description=schema["description"])

    # -- the prompt ----------------------------------------------------

    def on_llm_request(self, request: Any = None, **context: Any) -> dict[str, Any] | None:
        """Add the session's persona to the outgoing request's system prompt; never raises."""
        try:
            if not isinstance(request, dict):
                return None
            api_mode = context.get("api_mode") or None
            session_id = str(context.get("session_id") or "")
            if context.get("platform") == "subagent":  # delegate_task's child: its tools are read-only
                with self.state.lock:
                    self.state.subagents.put((current_home(), session_id), True)
            offered = self._offered(request, session_id)
            with_system_text(offered, "", api_mode)  # a shape we cannot change is left alone, before any I/O
            profile = self._profile()
            if self.section.active and profile.snapshots.settings.hermes.profile == "fixed":
                final = self._beside_section(offered, profile, session_id, api_mode)
                return None if final is request else {"request": final}
            text = self.persona(profile, session_id, offered)
            block = appendix(profile.snapshots.settings.injection.header, text)
            # Mnemosyne injects the injected target's file: its copy is of ours whatever view this session reads.
            changed = with_persona_once(offered, text, block, api_mode, profile.snapshots.base.path)
            final = changed if changed is not None else offered
            return None if final is request else {"request": final}
        except UnknownShape as error:
            self._shapes.warn(f"persona plugin: {error}; requests of this shape are sent without the persona")
            return None
        except NoProfile as error:  # an anonymous request: nothing to add, nothing wrong
            log.debug("persona plugin: %s", error)
            return None
        except Exception as error:  # the host must never see an exception from the middleware
            self._problems.warn(f"persona plugin: could not add the persona: {type(error).__name__}: {error}")
            log.debug("persona plugin traceback", exc_info=True)
            return None

    def _beside_section(self, request: dict[str, Any], profile: Profile, session_id: str,
                        api_mode: str | None) -> dict[str, Any]:
        """The host's section carries the persona: no block of ours, and a copy Mnemosyne injects of our file
        taken out (the same bytes every request, so the prompt cache holds)."""
        raw = self.section.last(SessionKey(*profile.persona, session_id)) or ""
        of_ours = same_file(profile.snapshots.base.path, injected_file())
        changed = map_system_text(request, lambda system: without_copy(system, raw, of_ours), api_mode)
        return changed if changed is not None else request

    def _record_section(self, profile: Profile, session_id: str, text: str) -> None:
        """Record what the section gave the session at the host's boundary (its snapshot, as everywhere)."""
        stored_id = snapshot_id(profile.home, session_id)
        try:
            if profile.snapshots.get(stored_id) is None:
                profile.snapshots.pin(stored_id, text)
            else:
                profile.snapshots.commit(stored_id, text)
        except PersonaError as error:  # the host froze the text anyway; the record waits for the next boundary
            log.debug("persona section: could not record session %s's persona: %s", session_id, error)

    def _offered(self, request: dict[str, Any], session_id: str) -> dict[str, Any]:
        """The request a subagent or the background review sends offers none of the persona's write tools: they
        may read the persona, never change it (their calls would be refused anyway; now they are not tempted)."""
        if not self._read_only(current_home(), session_id):
            return request
        return without_tools(request, WRITE_TOOLS) or request

    def persona(self, profile: Profile, session_id: str, request: dict[str, Any]) -> str:
        """The session's persona for ``request``. Once a session has a persona it keeps it, whatever the store
        does: a store that fails is worked around from memory (and the file), with one warning."""
        key = SessionKey(*profile.persona, session_id)
        # Hashing stays outside the lock.
        shown = Request(compaction_marker(request), message_digests(request))
        typed = summary_is_last(request)
        self._check_erasures(profile)
        with self.state.lock:
            seen = self.state.seen.get(key)
            boundary = self._boundary(key, shown, typed, seen)
            if seen is not None and seen.boundary == boundary and seen.warm:
                return seen.text  # warm: from memory, no I/O
        gate = self.state.session_gate(key)
        if seen is not None and seen.boundary == boundary and not seen.stale:  # pinned, not recorded yet: retry
            if not gate.lock.acquire(blocking=False):
                return seen.text
        else:
            gate.lock.acquire()
        try:
            return self._settle(profile, key, boundary, conversation_fingerprint(request))
        finally:
            gate.lock.release()

    def _boundary(self, key: SessionKey, now: Request, typed: bool, seen: Seen | None) -> str | None:
        """The compaction this request shows: a summary where Hermes inserts one, with the user's turn after it,
        that the session's previous request did not already hold in a history this one only adds to. A summary
        the request ends with was typed or pasted (Hermes always sends the turn after the one it inserts); one
        carried over from the previous request is the same compaction. Both keep the current boundary.
        Called with the state's lock held."""
        previous = self.state.previous.get(key)
        self.state.previous.put(key, now)
        marker, current = now.marker, seen.boundary if seen is not None else None
        if marker is None:
            return None
        if typed:
            return current
        if previous is None:  # the first request this process sees: the stored row decides
            return marker
        if previous.marker == marker and is_continuation(previous.digests, now.digests):
            return current if seen is not None else marker
        return marker

    def _settle(self, profile: Profile, key: SessionKey, boundary: str | None, opening: str | None) -> str:
        """Resolve the session's persona (store I/O, under the session's own gate only) and remember it."""
        snapshots, stored_id = profile.snapshots, snapshot_id(profile.home, key.session_id)
        began = Opening(profile.home, snapshots.profile, opening) if opening else None
        with self.state.lock:
            seen = self.state.seen.get(key)
            inherited = self.state.openings.get(began) if began else None
        if seen is not None and seen.boundary == boundary and seen.warm:
            return seen.text  # another request of this session settled it while we waited
        if seen is not None and seen.boundary == boundary and not seen.stale:
            seen = self._record_pinned(snapshots, stored_id, seen)
        else:
            try:
                seen = self._resolve(snapshots, stored_id, boundary, seen, inherited)
                self._problems.recovered()
            except PersonaError as error:
                seen = self._without_store(snapshots, boundary, seen, error)
        if seen.text or seen.recorded:  # nothing to pin yet (no file, no facts): ask again next time
            with self.state.lock:
                self.state.seen.put(key, seen)
                if began:
                    self.state.openings.put(began, seen.text)
        return seen.text

    def _resolve(self, snapshots: SessionSnapshots, session_id: str, boundary: str | None, seen: Seen | None,
                 inherited: str | None) -> Seen:
        """The text to serve, refreshing at a new compaction (PersonaError when the store fails)."""
        stored = snapshots.get(session_id)
        if stored is None and boundary is None:  # a new session: a branch keeps its parent's persona
            if inherited is not None:
                return self._record_pinned(snapshots, session_id, Seen(None, inherited, recorded=False))
            first = snapshots.snapshot(session_id)
            return Seen(None, first.text, recorded=bool(first.generation))
        if stored is not None and (boundary is None or stored.boundary == boundary):
            return Seen(boundary, stored.text)
        # The summary changed, or a continuing session (a new id after compaction) was first seen here.
        refresh = snapshots.refresh_at_compaction(session_id, boundary=boundary)
        if refresh.error:
            kept = stored.text if stored else (seen.text if seen else refresh.text)
            return Seen(boundary, kept, recorded=stored is not None)
        return Seen(boundary, refresh.text)

    def _without_store(self, snapshots: SessionSnapshots, boundary: str | None, seen: Seen | None,
                       error: PersonaError) -> Seen:
        """The store failed: keep the session's persona, or take the file as it is (pinned in memory).
        A persona a fact was forgotten from is never kept: the file, rendered again by the forget, is taken."""
        if seen is not None and seen.stale:
            seen = None
        if seen is not None and seen.boundary == boundary:
            return seen
        try:
            text = snapshots.current() if (seen is None or boundary is not None) else seen.text
        except (OSError, PersonaError):
            text = seen.text if seen is not None else ""
        self._problems.warn(f"persona plugin: the persona store failed ({error}); serving the persona from memory "
                            "until it recovers")
        return Seen(boundary, text, recorded=False)

    @staticmethod
    def _record_pinned(snapshots: SessionSnapshots, session_id: str, seen: Seen) -> Seen:
        """Try again to record a persona the session was given while the store could not take it."""
        try:
            snapshots.pin(session_id, seen.text, boundary=seen.boundary)
        except PersonaError:
            return seen
        return Seen(seen.boundary, seen.text)

    def _profile(self, who: Caller | None = None) -> Profile:
        """Snapshots and tools for the Hermes home and user of this request (NoProfile: none for them).

        Settings are loaded and the store opened under that home and user's
        own gate, never the plugin-wide lock. At most MAX_PROFILES stay open;
        the least recently used one is closed, so a gateway serving thousands
        of users holds a bounded number of files.
        """
        if who is None:
            identity = gateway_identity()
            who = Caller(current_home(), identity.user_id, identity.session_key,
                         hermes_reader(identity).project or "")
        with self.state.lock:
            found = self.state.profiles.get(who)
        if found is not None:
            return found
        gate = self.state.caller_gate(who)
        with gate.lock:
            return self._open_profile(who)

    def _open_profile(self, who: Caller) -> Profile:
        with self.state.lock:
            found = self.state.profiles.get(who)
        if found is not None:
            return found
        settings = hermes_settings(who.home, who.user_id or None, session_key=who.session_key or None)
        reader = Reader(HERMES, who.project or None)
        opened = Profile(SessionSnapshots(settings, busy_timeout_ms=settings.injection.busy_timeout_ms,
                                          reader=reader),
                         BoundTools(settings, legacy_names=False, writes=True, project=reader.project), who.home)
        with self.state.lock:
            evicted = self.state.profiles.put(who, opened)
        for old in evicted:
            old.snapshots.close()
        return opened

    # -- tools ---------------------------------------------------------

    def _handler(self, name: str) -> Callable[..., str]:
        def handle(args: Any = None, **kwargs: Any) -> str:
            try:
                profile = self._profile()
            except NoProfile as error:
                return error_json(str(error))
            except Exception as error:
                log.warning("persona plugin: %s: %s: %s", name, type(error).__name__, error)
                return error_json(f"the persona plugin could not load its settings: {type(error).__name__}")
            if name in WRITE_TOOLS and self._read_only(profile.home, str(kwargs.get("session_id") or "")):
                return error_json(f"{name} changes the persona; a subagent or background review may only read "
                                  "it (persona_list, persona_status)")
            session_id = snapshot_id(profile.home, str(kwargs.get("session_id") or ""))
            answer = profile.tools.call(name, args, session_id=session_id)
            if name in ERASING_TOOLS and '"status": "ok"' in answer:
                self.drop_pinned(profile)  # the very next request goes without it, not the next compaction
            return answer

        handle.__name__ = name
        return handle

    def _read_only(self, home: str, session_id: str) -> bool:
        """A delegate_task subagent (its requests say platform=subagent) or Hermes' background review fork
        (it shares the parent's session; Hermes marks its tool calls with the write origin
        ``background_review``) may read the persona but never change it."""
        with self.state.lock:
            if (home, session_id) in self.state.subagents:
                return True
        try:
            from tools.skill_provenance import get_current_write_origin
        except Exception:  # outside Hermes, or a Hermes without the marker: only subagents are known
            return False
        return bool(get_current_write_origin() == "background_review")

    # -- forgetting ----------------------------------------------------

    def drop_pinned(self, profile: Profile) -> None:
        """Mark every session of the profile stale: its next request re-reads the snapshot (which a forget
        deleted if it held the text) instead of serving the pinned one. The one exception to the snapshot
        rule: privacy beats the prompt cache."""
        self.state.mark_stale(profile.persona)

    def _check_erasures(self, profile: Profile) -> None:
        """A forget by another process (the CLI while Hermes runs): one indexed read of the profile's erasure
        count, at most every ``injection.check_interval_ms``; never on every warm request."""
        persona = profile.persona
        with self.state.lock:
            check = self.state.erasures.get(persona)
            if check is None:
                check = ErasureCheck(-1, Throttle(profile.snapshots.settings.injection.check_interval_ms))
                self.state.erasures.put(persona, check)
            if not check.poll.take():
                return
            before = check.count
        try:
            count = profile.snapshots.erasures()
        except PersonaError as error:  # the store is away: the warm path carries on, the next check retries
            log.debug("persona plugin: could not check for erasures: %s", error)
            return
        erasures_seen(profile)
        with self.state.lock:
            check.count = count
        if before >= 0 and count != before:
            self.drop_pinned(profile)

    def close(self) -> None:
        with self.state.lock:
            profiles = [profile for _, profile in self.state.profiles.items()]
            self.state.profiles.clear()
            self.state.seen.clear()
            self.state.previous.clear()
        for profile in profiles:
            profile.snapshots.close()


_plugin = PersonaPlugin()


def register(ctx: Any) -> None:
    """Called by Hermes when the plugin loads."""
    _plugin.register(ctx)
