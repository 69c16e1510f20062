"""The persona tier as a general Hermes plugin, beside whatever memory provider the user runs.

Hermes runs one memory provider (usually Mnemosyne), so this plugin does not
take that slot. It reaches the system prompt through the only general-plugin
seam that can, the ``llm_request`` middleware, and adds the persona tools
with ``register_tool`` under ``persona_*`` names that cannot collide with
Mnemosyne's.

General plugins get no compaction hook, so a compaction is read from the
request itself: the compaction-summary message changed. The session's
snapshot is refreshed then, and only then; every other request carries the
same bytes, so the prompt cache survives. The Hermes home is looked up per
request (Hermes can serve several profiles in one process), and with
``hermes.profile: user_id`` so is the user.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import PersonaError
from ..inject.prompt import appendix
from ..inject.sessions import SessionSnapshots
from ..warn_once import ProblemLog
from .hermes_session import BOUND, BoundTools, hermes_settings
from .tools import PersonaTools, error_json, openai_schema

log = logging.getLogger(__name__)
PLUGIN_NAME = "persona"
TOOLSET = "persona"
MAX_SESSIONS = 4096  # sessions remembered in memory; older ones are read back from the database
MAX_PROFILES = 32  # open profile stores; a gateway with more users reopens the least recently used
SUMMARY_WINDOW = 6  # Hermes puts the summary within the first few messages after the system prompt
# Hermes' own detector is used when importable; these cover the prefixes it has used.
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")


@dataclass(frozen=True, slots=True)
class Seen:
    """What a session was last given, at which compaction, and whether the store has it yet."""

    boundary: str | None
    text: str
    recorded: bool = True


class PersonaPlugin:
    """State shared by the middleware and the tools; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._seen: OrderedDict[tuple[str, str, str], Seen] = OrderedDict()
        self._profiles: OrderedDict[tuple[str, str], tuple[SessionSnapshots, BoundTools]] = OrderedDict()
        self._lineage: OrderedDict[str, str] = OrderedDict()  # conversation fingerprint -> its persona
        self._problems = ProblemLog(log)

    def register(self, ctx: Any) -> None:
        """Hermes' entry point: the prompt middleware and the nine persona tools."""
        ctx.register_middleware("llm_request", self.on_llm_request)
        for name, tool in PersonaTools(_no_settings).catalog(legacy=False).items():
            schema = openai_schema(tool, name=name, hidden=BOUND)
            ctx.register_tool(name=name, toolset=TOOLSET, schema=schema, handler=self._handler(name),
                              description=schema["description"])

    # -- the prompt ----------------------------------------------------

    def on_llm_request(self, request: Any = None, **context: Any) -> dict[str, Any] | None:
        """Add the session's persona to the outgoing request's system prompt; never raises."""
        try:
            if not isinstance(request, dict):
                return None
            snapshots, _ = self._profile()
            text = self.persona(str(context.get("session_id") or ""), compaction_marker(request),
                                lineage=conversation_fingerprint(request))
            if not text:
                return None
            return {"request": with_system_text(request, appendix(snapshots.settings.injection.header, text))}
        except Exception as error:  # the host must never see an exception from the middleware
            self._problems.warn(f"persona plugin: could not add the persona: {type(error).__name__}: {error}")
            log.debug("persona plugin traceback", exc_info=True)
            return None

    def persona(self, session_id: str, boundary: str | None, *, lineage: str | None = None) -> str:
        """The session's persona for a request showing compaction ``boundary`` (None: no compaction yet).

        Once a session has a persona it keeps it, whatever the store does: a
        store that fails is worked around from memory (and the file), with one
        warning.
        """
        snapshots, _ = self._profile()
        key = (snapshots.store.label, snapshots.profile, session_id)
        with self._lock:
            seen = self._seen.get(key)
            if seen is None or seen.boundary != boundary:
                try:
                    seen = self._resolve(snapshots, session_id, boundary, seen, lineage)
                    self._problems.recovered()
                except PersonaError as error:
                    seen = self._without_store(snapshots, boundary, seen, error)
            elif not seen.recorded:
                seen = self._record_pinned(snapshots, session_id, seen)
            if seen.text or seen.recorded:  # nothing to pin yet (no file, no facts): ask again next time
                self._remember(key, seen)
                if lineage:
                    self._remember_lineage(lineage, seen.text)
            return seen.text

    def _resolve(self, snapshots: SessionSnapshots, session_id: str, boundary: str | None, seen: Seen | None,
                 lineage: str | None) -> Seen:
        """The text to serve, refreshing at a new compaction (PersonaError when the store fails)."""
        stored = snapshots.get(session_id)
        if stored is None and boundary is None:  # a new session: a branch keeps its parent's persona
            inherited = self._lineage.get(lineage) if lineage else None
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
        """The store failed: keep the session's persona, or take the file as it is (pinned in memory)."""
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

    def _remember(self, key: tuple[str, str, str], seen: Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_SESSIONS:
            self._seen.popitem(last=False)

    def _remember_lineage(self, fingerprint: str, text: str) -> None:
        self._lineage[fingerprint] = text
        self._lineage.move_to_end(fingerprint)
        while len(self._lineage) > MAX_SESSIONS:
            self._lineage.popitem(last=False)

    def _profile(self) -> tuple[SessionSnapshots, BoundTools]:
        """Snapshots and tools for the Hermes home and user of this request.

        At most MAX_PROFILES stay open; the least recently used one is closed,
        so a gateway serving thousands of users holds a bounded number of files.
        """
        home, user = _hermes_home(), _user_id()
        with self._lock:
            found = self._profiles.get((home, user))
            if found is None:
                settings = hermes_settings(home, user or None)
                found = (SessionSnapshots(settings, busy_timeout_ms=settings.injection.busy_timeout_ms),
                         BoundTools(settings, legacy_names=False, writes=True))
                self._profiles[(home, user)] = found
                while len(self._profiles) > MAX_PROFILES:
                    self._profiles.popitem(last=False)[1][0].close()
            self._profiles.move_to_end((home, user))
            return found

    # -- tools ---------------------------------------------------------

    def _handler(self, name: str) -> Callable[..., str]:
        def handle(args: Any = None, **kwargs: Any) -> str:
            try:
                tools = self._profile()[1]
            except Exception as error:
                log.warning("persona plugin: %s: %s: %s", name, type(error).__name__, error)
                return error_json(f"the persona plugin could not load its settings: {type(error).__name__}")
            return tools.call(name, args, session_id=str(kwargs.get("session_id") or ""))

        handle.__name__ = name
        return handle

    def close(self) -> None:
        with self._lock:
            for snapshots, _ in self._profiles.values():
                snapshots.close()
            self._profiles.clear()


def _no_settings() -> Any:
    raise RuntimeError("schemas only")


def _hermes_home() -> str:
    try:
        from hermes_constants import get_hermes_home

        return str(get_hermes_home())
    except Exception:  # outside Hermes: the environment decides
        from ..fs.locations import hermes_home

        return str(hermes_home())


def _user_id() -> str:
    try:
        from gateway.session_context import get_session_env

        return get_session_env("HERMES_SESSION_USER_ID", "") or ""
    except Exception:  # not a gateway, or an older Hermes: one user
        return ""


# -- reading and changing a request -------------------------------------------


@functools.cache
def _summary_detector() -> Callable[[Any], bool]:
    try:
        from agent.context_compressor import ContextCompressor

        return ContextCompressor._is_context_summary_content  # type: ignore[no-any-return,unused-ignore]
    except Exception:  # outside Hermes, or a Hermes that moved it
        # Hermes may merge the summary into a tail message after a "[PRIOR CONTEXT ...]" header.
        return lambda content: any(prefix in _text_of(content) for prefix in SUMMARY_PREFIXES)


def _is_summary(content: Any) -> bool:
    try:
        return bool(_summary_detector()(content))
    except Exception:
        return False


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _messages(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("messages", "input"):  # chat completions and Anthropic; Responses
        items = request.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))


def _conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in _messages(request) if m.get("role") not in ("system", "developer")]


def compaction_marker(request: dict[str, Any]) -> str | None:
    """A fingerprint of the request's compaction summary, or None before the first compaction.

    Only the first few messages are looked at, where Hermes puts the summary,
    so a user who pastes summary-like text later on changes nothing.
    """
    for message in _conversation(request)[:SUMMARY_WINDOW]:
        content = message.get("content")
        if _is_summary(content):
            return _fingerprint(_text_of(content))
    return None


def conversation_fingerprint(request: dict[str, Any]) -> str | None:
    """A fingerprint of how the conversation began (its first two messages), once it has more than that.

    A branch (a new session id carrying its parent's history) has the
    parent's fingerprint, so it keeps the parent's persona and prompt cache.
    """
    conversation = _conversation(request)
    if len(conversation) < 3:
        return None
    return _fingerprint(repr([(m.get("role"), _text_of(m.get("content"))) for m in conversation[:2]]))


def _fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def with_system_text(request: dict[str, Any], text: str) -> dict[str, Any]:
    """``request`` with ``text`` appended to its system prompt, in whichever shape the API uses.

    Responses puts it in ``instructions``, Anthropic in ``system`` (a string
    or text blocks: appended to the last block, inside its cache breakpoint),
    chat completions in the leading system message.
    """
    changed = dict(request)
    if "instructions" in request or ("input" in request and "messages" not in request):
        changed["instructions"] = (request.get("instructions") or "") + text
    elif "system" in request:
        changed["system"] = _append_to_content(request["system"], text)
    else:
        messages = list(request.get("messages") or [])
        if messages and isinstance(messages[0], dict) and messages[0].get("role") in ("system", "developer"):
            first = dict(messages[0])
            first["content"] = _append_to_content(first.get("content"), text)
            messages[0] = first
        else:
            messages.insert(0, {"role": "system", "content": text.lstrip("\n")})
        changed["messages"] = messages
    return changed


def _append_to_content(content: Any, text: str) -> Any:
    if isinstance(content, list) and content:
        blocks = list(content)
        for index in range(len(blocks) - 1, -1, -1):
            block = blocks[index]
            if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
                blocks[index] = {**block, "text": block.get("text", "") + text}
                return blocks
        return [*blocks, {"type": "text", "text": text.lstrip("\n")}]
    if isinstance(content, str):
        return content + text
    return text.lstrip("\n")


_plugin = PersonaPlugin()


def register(ctx: Any) -> None:
    """Called by Hermes when the plugin loads."""
    _plugin.register(ctx)
