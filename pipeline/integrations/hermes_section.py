"""The persona as Hermes' own plugin prompt section (Hermes 0.22 and later).

Where the host has ``ctx.register_system_prompt_section``, the plugin
registers one section, ``persona-tier``. Hermes renders it when it builds a
session's prompt, freezes the bytes in the stored prompt (a resumed session
reads them back without calling us), and calls it again only at a boundary
of its own: a compaction, ``/new``, a session switch, a history rewind. So
every call is a boundary: it returns the session reader's persona as the
store has it now (an unchanged store gives the same bytes) and records it as
the session's snapshot. The text is capped to the host's ``max_chars`` at
section boundaries, in characters, our header included and the host's
heading not. A call that fails returns the last good text of the session (or
of its persona), never an empty persona by accident, and says why; a forget
this process has seen (its own, or another's: the store's erasure stamp, read
before every call) drops those texts first, so none holds a forgotten fact.

The section is told the session's ``cwd`` and ``profile_name`` but never the
gateway user, so with a per-user ``hermes.profile`` it stays empty and the
``llm_request`` middleware delivers the persona, as on Hermes 0.19.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import caches
from ..config.presets import section_limits
from ..config.sections import HostLimit
from ..errors import NoProfile
from ..hosts import registry
from ..inject.capped import within_limits
from ..inject.prompt import appendix
from ..store.forgotten import erasure_seen
from ..warn_once import ProblemLog
from .hermes_binding import HERMES, Identity, current_home, hermes_reader, load_hermes_settings, project_at
from .hermes_mnemosyne import replace_copy
from .hermes_room import Room, record, registry_of, room_for
from .hermes_state import Caller, Persona, Profile, SessionKey

__all__ = ["SECTION", "PersonaSection", "erasures_seen", "section_text", "without_copy"]

log = logging.getLogger(__name__)
SECTION = registry.sections()[HERMES]
LIMITS = section_limits()[HERMES]
MAX_REMEMBERED = 4096  # last good texts kept in memory, by session and by persona
# What a section gave last (shown, persona), the fallback of a call that fails: dropped with every text cache when
# a forget is seen (pipeline/caches.py), so it never serves a forgotten fact.
LAST_GOOD = caches.per_object("hermes_section.last_good", owner="profile",
                              key="a session (home, store, profile, session id) or a persona (home, store, profile)",
                              bound=MAX_REMEMBERED, holds_text=True)
SECTIONS_START = "<!-- hermes-plugin-sections:start -->"  # where Hermes' frame of the plugin sections begins


def without_copy(system: str, text: str, of_our_file: bool) -> str | None:
    """``system`` without a copy of the persona Mnemosyne injects before the plugin sections (ours carries the
    same header, and is never touched); None when there is none."""
    at = system.find(SECTIONS_START)
    head, tail = (system[:at], system[at:]) if at >= 0 else (system, "")
    changed = replace_copy(head, text, "", of_our_file=of_our_file)
    return None if changed is None else changed + tail


def section_text(profile: Profile, text: str, room: int | None = None) -> str:
    """What the host shows under its heading for ``text``: our header and the persona, cut at section boundaries
    to the host's limit (or to the ``room`` the other plugins' sections leave), as ``persona targets check``
    measures it (the host strips the text)."""
    if not text.strip() or room == 0:
        return ""
    snapshots = profile.snapshots
    header = appendix(snapshots.settings.injection.header, "\0")[:-1]  # what the appendix adds around any text
    limits = LIMITS if room is None or room >= SECTION.limit.amount else (HostLimit(amount=room, unit="chars"),)
    body = within_limits(text, snapshots.target, snapshots.settings.cap.counter, limits, header)
    return (header + body).strip() if body.strip() else ""


def erasures_seen(profile: Profile) -> None:
    """A forget anywhere (another process, another profile of the store) clears this process's text caches, the
    section's last good texts among them (:mod:`pipeline.caches`); never raises into the host."""
    try:
        erasure_seen(profile.snapshots.store)
    except Exception as error:  # the store is away: nothing can be learnt now; the next check retries
        log.debug("persona plugin: could not read the store's erasure stamp: %s", type(error).__name__)


class PersonaSection:
    """The section's callable, over the plugin's profiles; never raises into Hermes."""

    def __init__(self, profiles: Callable[[Caller], Profile], record: Callable[[Profile, str, str], None]) -> None:
        self._profiles, self._record = profiles, record
        self._last = LAST_GOOD.new()  # (shown, persona) by SessionKey and by Persona
        self._problems = ProblemLog(log)
        self._registry: Callable[[], Mapping[str, Any]] | None = None  # every plugin's sections, where shown
        self._rooms: dict[str, Room] = {}  # the figures last recorded, by Hermes home
        self._crowded = ProblemLog(log)  # said once while it stands, whatever else recovers
        self.active = False  # registered with a host that renders it

    def register(self, ctx: Any) -> bool:
        """Register the section where the host has the API; False where it has not (Hermes 0.19) or refused."""
        register = getattr(ctx, "register_system_prompt_section", None)
        if register is None:
            return False
        try:
            register(SECTION.id, self, max_chars=SECTION.limit.amount)
        except (TypeError, ValueError) as error:  # an id taken by another plugin, a host with other rules
            log.warning("persona plugin: Hermes refused the %s prompt section (%s); the llm_request middleware "
                        "delivers the persona instead", SECTION.id, error)
            return False
        self._registry = registry_of(ctx)
        self.active = True
        return True

    def __call__(self, info: Mapping[str, Any] | None = None) -> str:
        """The section for the session ``info`` names (Hermes' read-only mapping); "" for nothing to show."""
        session_id = str((info or {}).get("session_id") or "")
        who = self._caller(info or {})
        try:
            if load_hermes_settings(who.home).hermes.profile != "fixed":
                return ""  # per-user profiles: the section is never told the user; the middleware delivers
            profile = self._profiles(who)
        except NoProfile as error:
            log.debug("persona section: %s", error)
            return ""
        except Exception as error:
            return self._last_good(None, None, error)
        key = SessionKey(*profile.persona, session_id)
        erasures_seen(profile)  # a forget anywhere drops the last good texts before one could be served
        try:
            try:
                text = profile.snapshots.current()
            except FileNotFoundError:  # no file and no facts: nothing to show yet
                text = ""
            self._record(profile, session_id, text)
            shown = section_text(profile, text, self._room(who.home, info or {}))
        except Exception as error:  # OSError, PersonaError, or anything else: never an empty persona by accident
            return self._last_good(key, profile.persona, error)
        self._last.put(key, (shown, text))
        self._last.put(profile.persona, (shown, text))
        self._problems.recovered()
        return shown

    def _room(self, home: str, info: Mapping[str, Any]) -> int:
        """What the other plugins' sections leave ours for this session (recorded for `targets check`, and said
        once while it is less than the section's own limit)."""
        room = room_for(SECTION, self._registry, info)
        if self._rooms.get(home) != room:
            self._rooms[home] = room
            record(home, room)
        if room.room >= SECTION.limit.amount:
            self._crowded.recovered()
        else:
            self._crowded.warn(f"persona section: other plugins' sections take {room.others:,} of the "
                                f"{room.total:,} characters Hermes shares among them; the persona has {room.room:,}")
        return room.room

    def last(self, key: SessionKey) -> str | None:
        """The persona (as the store had it, before the header and the cut) this process last gave the session."""
        found: tuple[str, str] | None = self._last.get(key)
        return found[1] if found is not None else None

    def _caller(self, info: Mapping[str, Any]) -> Caller:
        """The home and the project of the session's working directory (the host says it; else Hermes')."""
        cwd = str(info.get("cwd") or "")
        try:
            project = project_at(Path(cwd)) if cwd and Path(cwd).is_dir() else hermes_reader(Identity()).project
        except Exception:  # a directory that cannot be read names no project
            project = ""
        return Caller(current_home(), "", "", project or "")

    def _last_good(self, key: SessionKey | None, persona: Persona | None, error: BaseException) -> str:
        kept: tuple[str, str] | None = self._last.get(key) if key is not None else None
        if kept is None and persona is not None:
            kept = self._last.get(persona)
        shown = kept[0] if kept is not None else ""
        self._problems.warn(f"persona section: could not read the persona ({type(error).__name__}: {error}); "
                            + ("kept the last good text" if shown else "nothing to show until it can be read"))
        log.debug("persona section traceback", exc_info=error)
        return shown
