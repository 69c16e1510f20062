"""A Hermes Agent memory provider named ``persona`` (contract: hermes-agent 0.19).

It imports without Hermes: the ``MemoryProvider`` base class is looked up
lazily and replaced by a plain object when Hermes is absent. Every hook
accepts ``**kwargs``, and no hook raises into the host.

The system-prompt block is the session's snapshot (session mode): stable for
the session's life, refreshed only in ``on_pre_compress``, and inherited by
the new session id Hermes switches to after compression.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from ..atomic import ensure_private_dir
from ..errors import PersonaError
from ..injector import PersonaInjector
from ..settings import Settings, load_settings_with_provenance
from ..tools import WRITE_TOOLS, PersonaTools, call, openai_schema

log = logging.getLogger(__name__)
PROVIDER_NAME = "persona"


def _base_class() -> type:
    try:
        from agent.memory_provider import MemoryProvider
    except Exception:  # Hermes is not installed (tests, other hosts): behave as a plain class
        return object
    return MemoryProvider  # type: ignore[no-any-return,unused-ignore]


class PersonaMemoryProvider(_base_class()):  # type: ignore[misc]
    """The persona tier as a Hermes memory provider."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._given = settings
        self._settings: Settings | None = None
        self._injector: PersonaInjector | None = None
        self._tools: dict[str, Any] = {}
        self._primary = True
        self._session_id = "default"

    @property
    def name(self) -> str:
        return PROVIDER_NAME

    def is_available(self) -> bool:
        """True when the package and its settings load; makes no network call."""
        try:
            self._given or _settings_for_hermes(None)
        except PersonaError as error:
            log.warning("persona provider unavailable: %s", error)
            return False
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Bind to a session. Writes (snapshots, tools that change the store) only for the primary agent."""
        self._session_id = session_id or "default"
        self._primary = kwargs.get("agent_context", "primary") == "primary"
        self._settings = None  # resolve again now that Hermes has said where its home is
        settings = self._load(kwargs.get("hermes_home"))
        self._injector = PersonaInjector(settings, session_id=self._session_id)
        parent = kwargs.get("parent_session_id")
        if parent and self._primary:
            self._guard(lambda: self._injector.switch_session(self._session_id, parent_session_id=parent))

    def _load(self, hermes_home: str | os.PathLike[str] | None) -> Settings:
        if self._settings is None:
            settings = self._settings = self._given or _settings_for_hermes(hermes_home)
            self._tools = {tool.__name__: tool for tool in PersonaTools(lambda: settings).all()}
        return self._settings

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """The persona tools in OpenAI function format."""
        self._load(None)
        return [openai_schema(tool) for tool in self._tools.values()
                if self._primary or tool.__name__ not in WRITE_TOOLS]

    def handle_tool_call(self, tool_name: str, args: Any = None, **kwargs: Any) -> str:
        """Run a tool; always a JSON string, never an exception."""
        try:
            self._load(None)
            if isinstance(args, str):
                args = json.loads(args or "{}")
            if not isinstance(args, dict):
                return json.dumps({"error": "arguments must be a JSON object"})
            if not self._primary and tool_name in WRITE_TOOLS:
                return json.dumps({"error": f"{tool_name} changes the persona; only the primary agent may call it"})
            return json.dumps(call(self._tools, tool_name, args), ensure_ascii=False, default=str)
        except PersonaError as error:
            return json.dumps({"error": str(error)})
        except json.JSONDecodeError as error:
            return json.dumps({"error": f"arguments are not valid JSON: {error}"})
        except Exception as error:  # the host must never see an exception from a tool call
            # The traceback may quote fact text, so it goes to DEBUG only.
            log.error("persona tool %s failed: %s", tool_name, type(error).__name__)
            log.debug("persona tool %s traceback", tool_name, exc_info=True)
            return json.dumps({"error": f"internal error in {tool_name}: {type(error).__name__}"})

    def system_prompt_block(self, **kwargs: Any) -> str:
        """The session's persona under its header; the same bytes until a compaction changes them."""
        if self._injector is None:
            return ""
        if not self._primary:
            return self._guard(self._read_only_block) or ""
        block = self._guard(self._injector.block) or ""
        return self._injector.appendix(block).lstrip("\n")

    def _read_only_block(self) -> str:
        # Subagents may not write a snapshot: reuse the session's if it exists, else the capped file.
        assert self._injector is not None
        snapshot = self._injector.sessions().get(self._session_id)
        text = snapshot.text if snapshot else self._injector.read_capped()
        return self._injector.appendix(text).lstrip("\n")

    def on_pre_compress(self, messages: Any = None, **kwargs: Any) -> str:
        """The compaction boundary: refresh the snapshot if, and only if, the persona file changed."""
        if self._injector is not None and self._primary:
            result = self._guard(self._injector.refresh_at_compaction)
            if result is not None and result.changed:
                log.info("persona changed at compaction (generation %d)", result.generation)
        return ""

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str | None = None,
                          reset: bool = False, **kwargs: Any) -> None:
        """After compression the new id inherits the parent's snapshot; ``reset`` starts afresh."""
        if self._injector is None:
            return
        parent = None if reset else (parent_session_id or self._session_id)
        self._session_id = new_session_id
        if self._primary:
            self._guard(lambda: self._injector.switch_session(new_session_id, parent_session_id=parent))
        else:
            self._injector.session_id = new_session_id

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

    def on_turn_start(self, *args: Any, **kwargs: Any) -> None:
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

    def backup_paths(self, **kwargs: Any) -> list[str]:
        if self._settings is None:
            return []
        return [str(self._settings.target(self._settings.injection.target).path)]

    def _guard(self, action: Any) -> Any:
        try:
            return action()
        except (PersonaError, OSError) as error:
            log.warning("persona provider: %s", error)
            return None


def _settings_for_hermes(hermes_home: str | os.PathLike[str] | None) -> Settings:
    """The user's settings, with session-mode injection on, and Hermes' home for defaulted paths."""
    settings, provenance = load_settings_with_provenance()
    update: dict[str, Any] = {"enabled": True, "mode": "session"}
    home = Path(hermes_home) if hermes_home else None
    if home is not None and ("injection", "file") not in provenance:
        update["file"] = home / "memory" / "persona.md"
    store = settings.store
    if home is not None and settings.store.path is None and not os.environ.get("MNEMOSYNE_DATA_DIR"):
        data_dir = home / "mnemosyne" / "data"
        ensure_private_dir(data_dir)  # Mnemosyne's own layout; it would create this directory too
        store = store.model_copy(update={"path": data_dir / "mnemosyne.db"})
    return settings.model_copy(update={"injection": settings.injection.model_copy(update=update), "store": store})
