"""A Hermes Agent memory provider named ``persona`` (contract: hermes-agent 0.19).

Use it when no other memory provider is selected (``persona hermes install
--activate --as-provider``); beside Mnemosyne or any other provider, the
general plugin (:mod:`.hermes_plugin`) does the same job. It imports without
Hermes: the ``MemoryProvider`` base class is looked up lazily and replaced by
a plain object when Hermes is absent.

Hermes calls hooks from whichever thread it is on (a new thread per turn,
``/compress`` on another), so every hook takes the provider's lock, and none
ever raises into the host.

The system-prompt block is the session's snapshot: stable for the session's
life, and refreshed only when a compaction really rewrote the history.
Hermes calls ``on_pre_compress`` before it knows whether compression will
make progress, so the refresh happens in three steps:

1. ``on_pre_compress`` reads the file and holds the text, writing nothing;
2. the prompt rebuild that only a successful compaction makes
   (``system_prompt_block``) shows it;
3. ``on_session_switch`` (the boundary) records it for the continuing session.

A compaction that makes no progress never rebuilds the prompt, so the held
text is dropped at the next turn and nothing changes, stored row included.
A rebuild without a compaction (``/model``) shows the snapshot as it was.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..config.schema import Settings
from ..config.targets import resolve_target
from ..errors import NoProfile
from ..inject.injector import PersonaInjector
from .hermes_binding import BoundTools, Identity, hermes_reader, hermes_settings, load_hermes_settings
from .tools import error_json

log = logging.getLogger(__name__)
PROVIDER_NAME = "persona"
T = TypeVar("T")


def _base_class() -> type:
    try:
        from agent.memory_provider import MemoryProvider
    except Exception:  # Hermes is not installed (tests, other hosts): behave as a plain class
        return object
    return MemoryProvider  # type: ignore[no-any-return,unused-ignore]


def guarded(default: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Run a hook under the provider's lock; log any failure and return ``default`` instead of raising."""

    def wrap(hook: Callable[..., T]) -> Callable[..., T]:
        def run(self: PersonaMemoryProvider, *args: Any, **kwargs: Any) -> T:
            try:
                with self._lock:
                    return hook(self, *args, **kwargs)
            except Exception as error:  # the host must never see an exception from a hook
                log.warning("persona provider: %s failed: %s: %s", hook.__name__, type(error).__name__, error)
                log.debug("persona provider: %s traceback", hook.__name__, exc_info=True)
                return default() if callable(default) else default  # type: ignore[no-any-return,unused-ignore]

        run.__name__, run.__doc__ = hook.__name__, hook.__doc__
        return run

    return wrap


class PersonaMemoryProvider(_base_class()):  # type: ignore[misc]
    """The persona tier as a Hermes memory provider."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._given = settings
        self._lock = threading.RLock()
        self._settings: Settings | None = None
        self._injector: PersonaInjector | None = None
        self._tools: BoundTools | None = None
        self._primary = True
        self._session_id = "default"
        self._pending: str | None = None  # read at on_pre_compress, for the rebuild a real compaction makes
        self._rebuilt: str | None = None  # what that rebuild showed, for the boundary to record

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    @guarded(False)
    def is_available(self) -> bool:
        """True when the package and its settings load; makes no network call."""
        self._given or load_hermes_settings(None)
        return True

    @guarded(None)
    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Bind to a session. Writes (snapshots, tools that change the store) only for the primary agent."""
        if self._injector is not None:
            self._injector.close()
        self._session_id = session_id or "default"
        self._primary = kwargs.get("agent_context", "primary") == "primary"
        self._pending = self._rebuilt = None
        self._injector = self._tools = self._settings = None
        try:
            settings = self._settings = self._given or hermes_settings(
                kwargs.get("hermes_home"), kwargs.get("user_id"), session_key=kwargs.get("gateway_session_key"))
        except NoProfile as error:  # an anonymous gateway request: no persona, no tools, not a failure
            log.info("persona provider: %s", error)
            return
        reader = hermes_reader(Identity(str(kwargs.get("user_id") or ""), str(kwargs.get("gateway_session_key") or "")))
        self._tools = BoundTools(settings, legacy_names=True, writes=self._primary, project=reader.project)
        self._injector = PersonaInjector(settings, session_id=self._session_id, reader=reader)
        parent = kwargs.get("parent_session_id")
        if parent and self._primary:
            self._injector.switch_session(self._session_id, parent_session_id=parent)

    @guarded(list)
    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The persona tools in OpenAI function format (bound to a profile only by ``initialize``)."""
        if self._tools is not None:
            return self._tools.schemas()
        return BoundTools(self._given or load_hermes_settings(None), legacy_names=True, writes=self._primary).schemas()

    def handle_tool_call(self, tool_name: str, args: Any = None, **kwargs: Any) -> str:
        """Run a tool; always a JSON string, never an exception."""
        tools = self._tools
        if tools is None:  # never initialized, or an anonymous request: no profile to act on
            return error_json("the persona provider could not load its settings, or this session names no user")
        return tools.call(tool_name, args, session_id=self._session_id)

    @guarded("")
    def system_prompt_block(self, **kwargs: Any) -> str:
        """The session's persona under its header; the same bytes until a real compaction changes them."""
        injector = self._injector
        if injector is None:
            return ""
        if not self._primary:
            text = self._read_only_text(injector)
        elif self._pending is not None:  # the rebuild that follows a compaction which made progress
            text, self._rebuilt, self._pending = self._pending, self._pending, None
        else:
            text = injector.block()
        return injector.appendix(text).lstrip("\n")

    def _read_only_text(self, injector: PersonaInjector) -> str:
        # A subagent may not write a snapshot: reuse the session's if there is one, else the capped file.
        snapshot = injector.sessions().get(self._session_id)
        return snapshot.text if snapshot else injector.read_capped()

    @guarded("")
    def on_pre_compress(self, messages: Any = None, **kwargs: Any) -> str:
        """Read the persona a compaction would bring in; nothing is recorded until the boundary."""
        if self._injector is not None and self._primary:
            self._pending = self._injector.current()
        return ""

    @guarded(None)
    def on_session_switch(self, new_session_id: str, *, parent_session_id: str | None = None,
                          reset: bool = False, **kwargs: Any) -> None:
        """The boundary: record what the rebuilt prompt showed, else inherit; ``reset`` starts afresh."""
        injector = self._injector
        parent = None if reset else (parent_session_id or self._session_id)
        self._session_id = new_session_id
        if injector is None:
            return
        if not self._primary:
            injector.session_id = new_session_id
        elif self._rebuilt is not None and parent is not None:
            injector.adopt(self._rebuilt, session_id=new_session_id, parent_session_id=parent)
        else:
            injector.switch_session(new_session_id, parent_session_id=parent)
        self._pending = self._rebuilt = None

    @guarded(None)
    def on_turn_start(self, *args: Any, **kwargs: Any) -> None:
        """A compaction held since the last turn made no progress (no rebuild, no boundary): drop it."""
        self._pending = self._rebuilt = None

    @guarded(None)
    def shutdown(self, **kwargs: Any) -> None:
        if self._injector is not None:
            self._injector.close()

    # Hooks this provider has no use for; accepted so that any Hermes version can call them.
    def prefetch(self, query: str = "", **kwargs: Any) -> str:
        return ""

    def queue_prefetch(self, *args: Any, **kwargs: Any) -> None:
        return None

    def sync_turn(self, *args: Any, **kwargs: Any) -> None:
        return None

    def on_session_end(self, *args: Any, **kwargs: Any) -> None:
        return None

    def on_memory_write(self, *args: Any, **kwargs: Any) -> None:
        return None

    def on_delegation(self, *args: Any, **kwargs: Any) -> None:
        return None

    def get_config_schema(self, **kwargs: Any) -> dict[str, Any]:
        return {}

    def save_config(self, *args: Any, **kwargs: Any) -> None:
        return None

    @guarded(list)
    def backup_paths(self, **kwargs: Any) -> list[str]:
        if self._settings is None:
            return []
        return [str(resolve_target(self._settings, self._settings.injection.target).path)]
