"""Hermes Agent: a drop-in replacement for Mnemosyne's ``HermesPersonaPromptMixin``.

Same method names, same header, same behaviour when disabled (no file
access), but driven by the persona-tier settings and the shared cap. With
``injection.mode: session`` the block is the session's snapshot
(``persona_session_id``), refreshed only by ``_persona_refresh_at_compaction``.
A host that sets no ``persona_session_id`` (Mnemosyne's own provider passes
none) gets the live file and one warning, never one snapshot frozen for every
session.
"""

from __future__ import annotations

from ..config.load import load_settings
from ..config.schema import Settings
from ..inject.injector import PersonaInjector


class PersonaPromptMixin:
    """Mix into an agent class; call ``_with_persona_block(base_prompt)`` when building the system prompt.

    Settings are resolved on first use (or taken from ``persona_settings``, if
    the host sets it), never at import time.
    """

    persona_settings: Settings | None = None
    persona_session_id: str | None = None
    _persona_injector: PersonaInjector | None = None

    def _persona(self) -> PersonaInjector:
        if self._persona_injector is None:
            settings = self.persona_settings or load_settings()
            self._persona_injector = PersonaInjector(settings, session_id=self.persona_session_id)
        return self._persona_injector

    def _persona_block(self) -> str:
        """The capped persona text, or "" (disabled, missing or unreadable file)."""
        return self._persona().block()

    def _with_persona_block(self, base: str) -> str:
        """``base`` plus the persona block under ``# L3 Persona (Active Behavioral Rules)``."""
        return self._persona().inject(base)

    def _persona_refresh_at_compaction(self) -> bool:
        """Call at a compaction boundary (session mode); True if the persona changed."""
        return self._persona().refresh_at_compaction().changed


HermesPersonaPromptMixin = PersonaPromptMixin  # the existing tier's name, for drop-in imports
