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

from ..sessions import SessionSnapshots, appendix
from ..tools import PersonaTools, error_json, openai_schema
from .hermes_session import BOUND, BoundTools, hermes_settings

log = logging.getLogger(__name__)
PLUGIN_NAME = "persona"
TOOLSET = "persona"
MAX_SESSIONS = 4096  # sessions remembered in memory; older ones are read back from the database
# Hermes' own detector is used when importable; these cover the prefixes it has used.
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:")


@dataclass(frozen=True, slots=True)
class Seen:
    """What a session was last given, and at which compaction."""

    boundary: str | None
    text: str


class PersonaPlugin:
    """State shared by the middleware and the tools; safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._seen: OrderedDict[tuple[str, str, str], Seen] = OrderedDict()
        self._profiles: dict[tuple[str, str], tuple[SessionSnapshots, BoundTools]] = {}

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
            text = self.persona(str(context.get("session_id") or ""), compaction_marker(request))
            if not text:
                return None
            header = self._profile()[0].settings.injection.header
            return {"request": with_system_text(request, appendix(header, text))}
        except Exception as error:  # the host must never see an exception from the middleware
            log.warning("persona plugin: could not add the persona: %s: %s", type(error).__name__, error)
            log.debug("persona plugin traceback", exc_info=True)
            return None

    def persona(self, session_id: str, boundary: str | None) -> str:
        """The session's persona for a request showing compaction ``boundary`` (None: no compaction yet)."""
        snapshots, _ = self._profile()
        key = (str(snapshots.store.path), snapshots.profile, session_id)
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and seen.boundary == boundary:
                self._seen.move_to_end(key)
                return seen.text
            text, settled = self._resolve(snapshots, session_id, boundary, seen)
            if settled:
                self._remember(key, Seen(boundary, text))
            return text

    @staticmethod
    def _resolve(snapshots: SessionSnapshots, session_id: str, boundary: str | None, seen: Seen | None
                 ) -> tuple[str, bool]:
        """The text to serve, refreshing at a new compaction, and whether it is settled for this boundary."""
        stored = snapshots.get(session_id)
        if stored is None and boundary is None:  # a new conversation: its first snapshot
            first = snapshots.snapshot(session_id)
            return first.text, bool(first.generation)
        if stored is not None and (boundary is None or stored.boundary == boundary):
            return stored.text, True
        # The summary changed, or a continuing session (a new id after compaction) was first seen here.
        refresh = snapshots.refresh_at_compaction(session_id, boundary=boundary)
        if refresh.error:
            kept = stored.text if stored else (seen.text if seen else "")
            return kept, stored is not None
        return refresh.text, True

    def _remember(self, key: tuple[str, str, str], seen: Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > MAX_SESSIONS:
            self._seen.popitem(last=False)

    def _profile(self) -> tuple[SessionSnapshots, BoundTools]:
        """Snapshots and tools for the Hermes home and user of this request (opened once each)."""
        home, user = _hermes_home(), _user_id()
        with self._lock:
            found = self._profiles.get((home, user))
            if found is None:
                settings = hermes_settings(home, user or None)
                found = (SessionSnapshots(settings, busy_timeout_ms=settings.injection.busy_timeout_ms),
                         BoundTools(settings, legacy_names=False, writes=True))
                self._profiles[(home, user)] = found
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
        from ..paths import hermes_home

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


def compaction_marker(request: dict[str, Any]) -> str | None:
    """A fingerprint of the request's compaction summary, or None before the first compaction."""
    for message in _messages(request):
        if message.get("role") in ("system", "developer"):
            continue
        content = message.get("content")
        if _is_summary(content):
            return hashlib.sha256(_text_of(content).encode("utf-8", "surrogatepass")).hexdigest()
    return None


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
