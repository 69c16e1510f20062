"""Mnemosyne's own persona injection, seen from beside it: the prompt carries the persona block once.

With ``MNEMOSYNE_PERSONA_ENABLED=true`` Mnemosyne's provider appends
``\\n\\n# L3 Persona (Active Behavioral Rules)\\n`` and its word-capped copy of
the persona file to its ``system_prompt_block()``. Hermes joins that into the
system prompt it caches for the session, right before its timestamp line
(``Conversation started: ...``). When that copy is of our file, the plugin
replaces it in place with the session's own persona (see
:func:`with_persona_once`) rather than append a second one, so:

- the block keeps Mnemosyne's position, and the bytes change only when
  Hermes' cached prompt or the session's snapshot does (the prompt cache
  holds for the whole session generation);
- the persona is ours: the session's snapshot, refreshed at a compaction,
  without a forgotten fact from the very next request (Mnemosyne's copy was
  read when Hermes built the prompt, and may be older than the file).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .. import inputs
from .hermes_request import map_system_text, with_system_text

MNEMOSYNE_HEADER = "# L3 Persona (Active Behavioral Rules)"  # hermes_persona_prompt.PERSONA_PROMPT_HEADER
MIXIN_MODULE = "mnemosyne.integrations.hermes_persona_prompt"
ENABLED_ENV, FILE_ENV, CAP_ENV = "MNEMOSYNE_PERSONA_ENABLED", "MNEMOSYNE_PERSONA_FILE", "MNEMOSYNE_PERSONA_TOKEN_CAP"
DEFAULT_CAP = 1500  # Mnemosyne's DEFAULT_PERSONA_TOKEN_CAP
TIMESTAMP = "\n\nConversation started: "  # what Hermes 0.19 puts right after the memory providers' blocks
TRUTHY = ("1", "true", "yes", "on")


def mnemosyne_cap(text: str, token_cap: int = DEFAULT_CAP) -> str:
    """``text`` as Mnemosyne's ``_persona_block()`` would inject it (its word cap, its truncation note)."""
    words, limit = text.split(), max(0, int(token_cap * 0.75))
    if len(words) <= limit:
        return text
    truncated = " ".join(words[:limit])
    cut = truncated.rfind("\n## ")
    return (truncated[:cut] if cut > 0 else truncated) + "\n... (truncated, see persona file for full content)"


def injected_file() -> Path | None:
    """The file the Mnemosyne loaded in this process injects, or None (not loaded, or its injection is off).

    Mnemosyne reads its settings once, at import, into the mixin's class
    attributes, so these are what it does, whatever the environment says now.
    """
    mixin = getattr(sys.modules.get(MIXIN_MODULE), "HermesPersonaPromptMixin", None)
    if mixin is None or getattr(mixin, "PERSONA_ENABLED", False) is not True:
        return None
    return Path(str(getattr(mixin, "PERSONA_FILE", "")))


def same_file(ours: Path, theirs: Path | None) -> bool:
    if theirs is None:
        return False
    try:
        return inputs.expanded(ours).resolve() == inputs.expanded(theirs).resolve()
    except OSError:
        return False


def replace_copy(system: str, text: str, block: str, *, of_our_file: bool) -> str | None:
    """``system`` with Mnemosyne's copy of the persona replaced by ``block``; None when it holds none.

    A copy is the header, then either the session's persona (as Mnemosyne
    would cap it) or, when Mnemosyne is known to inject our file, whatever it
    read from that file, up to Hermes' timestamp line. Anything else under
    that header (another file, text a user typed) is left alone.
    """
    opening = f"\n\n{MNEMOSYNE_HEADER}\n"
    start = system.rfind(opening)
    if start < 0:
        return None
    body = start + len(opening)
    end = _copy_end(system, body, text, of_our_file)
    if end is None:
        return None
    return system[:start] + block.rstrip() + system[end:]


def _copy_end(system: str, at: int, text: str, of_our_file: bool) -> int | None:
    # A copy of our own file is all of it, up to Hermes' timestamp: never only the part that matches today's
    # persona, since a copy read before a forget starts with the shorter persona and goes on with the forgotten
    # section.
    if of_our_file:
        stop = system.find(TIMESTAMP, at)
        return stop if stop >= 0 else len(system)
    cap = _token_cap()
    for candidate in dict.fromkeys((mnemosyne_cap(text, cap).rstrip(), text.rstrip())):
        if candidate and system.startswith(candidate, at) and _ends_block(system, at + len(candidate)):
            return at + len(candidate)
    return None


def _ends_block(system: str, at: int) -> bool:
    return at == len(system) or system.startswith("\n\n", at)


def with_persona_once(request: dict[str, Any], text: str, block: str, api_mode: str | None,
                      target: Path) -> dict[str, Any] | None:
    """``request`` carrying ``block`` exactly once: in place of Mnemosyne's copy, else appended.

    None when there is nothing to change (no persona and no copy to take out).
    With no persona of ours (an empty file, every fact forgotten), a copy of
    our file is taken out: it may hold a fact the user just forgot.
    """
    of_ours = same_file(target, injected_file())

    def change(system: str) -> str | None:
        return replace_copy(system, text, block, of_our_file=of_ours)

    replaced = map_system_text(request, change, api_mode)
    if replaced is not None:
        return replaced
    return with_system_text(request, block, api_mode) if block else None


# -- install time --------------------------------------------------------------------


def double_injection(home: Path, target: Path) -> str | None:
    """Where Mnemosyne's own persona injection of ``target`` is switched on for ``home``, or None.

    Hermes loads ``$HERMES_HOME/.env`` into the environment at startup and
    Mnemosyne reads the variables then, so both places count.
    """
    dotenv = _dotenv(home / ".env")
    for where, values in ((f"{home / '.env'}", dotenv), ("the environment", dict(inputs.environment()))):
        if values.get(ENABLED_ENV, "").strip().lower() in TRUTHY:
            theirs = values.get(FILE_ENV) or dotenv.get(FILE_ENV) or inputs.environ(FILE_ENV)
            if same_file(target, Path(theirs) if theirs else Path(inputs.home()) / ".hermes" / "memory" / "persona.md"):
                return where
    return None


def _dotenv(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    pairs = (line.removeprefix("export ").split("=", 1) for line in lines if "=" in line
             and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip().strip("'\"") for key, value in pairs}


def _token_cap() -> int:
    """Mnemosyne's word cap: the loaded mixin's, else what its variable would give it."""
    mixin = getattr(sys.modules.get(MIXIN_MODULE), "HermesPersonaPromptMixin", None)
    try:
        return int(getattr(mixin, "PERSONA_TOKEN_CAP", None) or inputs.environ(CAP_ENV) or DEFAULT_CAP)
    except (TypeError, ValueError):
        return DEFAULT_CAP
