"""Render before read, for a host that reads targets without an injector (the MCP server's resources and prompt).

The live injector (:mod:`pipeline.inject.injector`) renders what is due before
it reads its file, so a fact written by anyone reaches the very next prompt.
A reader of many (profile, target) pairs needs the same: one indexed read of
the profile's change counter per read (and a stat of each host memory file
:func:`pipeline.schedule.learn.learn_due` reads), and only when one moved, the render-due
tick of :func:`pipeline.schedule.tick.render_due` (the same triggers, the
profile's lock with no wait), then the read target itself if it is still
behind (:func:`pipeline.inject.views.render_view`): a profile other than
``store.profile`` cannot tick a target with a fixed path, yet its own
``{profile}`` targets must be current. Unlike a prompt, a read is asked for
(a resource, a prompt, a subscriber's poll), never on every token of a warm
path, so it is not throttled: a write just made is in the next read.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .. import caches
from ..config.schema import Settings
from ..config.targets import ResolvedTarget
from ..config.urls import store_target
from ..errors import PersonaError
from ..store import PersonaStore
from ..store.forgotten import erasure_seen
from .views import has_facts, render_view

log = logging.getLogger(__name__)
MAX_PROFILES = 64  # open stores kept, least recently used closed first


@dataclass
class _Profile:
    """One profile's store, and its change counter when each of its targets was last brought up to date."""

    store: PersonaStore
    rendered_at: dict[str, tuple[object, ...]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _close(key: tuple[str, str], due: _Profile) -> None:
    due.store.close()


# Each reader's open stores, by (store, profile): no text (what a read gives is the target's own source's), but a
# copy all the same, so it is declared (pipeline/caches.py) and bounded; a store evicted is closed.
PROFILES = caches.per_object("render_due.profiles", owner="profile", key="a store (its spelling) and a profile",
                             bound=MAX_PROFILES, holds_text=False, on_evict=_close)


class RenderBeforeRead:
    """Render a profile's due targets before one of them is read; safe from any thread."""

    def __init__(self) -> None:
        self._profiles = PROFILES.new()
        self._lock = threading.Lock()  # one opener per key: a second caller waits for the first's store

    def __call__(self, settings: Settings, target: ResolvedTarget) -> bool:
        """Render what is due for ``target``'s profile, and ``target`` if it is behind; True when a render ran
        (a read must look again, now). A store that is missing or fails renders nothing: the text as last
        rendered is read."""
        where = store_target(settings)
        if isinstance(where, Path) and not where.exists():
            return False  # no database yet: a hand-written file needs none
        try:
            due = self._profile(settings, target.profile)
            with due.lock:
                return self._render(settings, due, target)
        except PersonaError as error:
            log.debug("profile %s: no render before the read (%s); serving the last good text", target.profile,
                      error)
            return False

    def _render(self, settings: Settings, due: _Profile, target: ResolvedTarget) -> bool:
        # the render pipeline loads only when a profile is looked at
        from ..schedule.learn import memory_stamp
        from ..schedule.tick import render_due

        erasure_seen(due.store)  # a forget anywhere: this process's text caches go before the read
        # The hosts' memory files are inputs too: an entry a host's model saved is learned (in render_due) and in
        # this read, though the store has not changed since the last one (a stat per file tells).
        seen = (due.store.generation(), memory_stamp(settings, target.profile))
        if due.rendered_at.get(target.name) == seen:
            return False
        # Marked first: a render that fails (a hand-written file it may not replace) is tried again only
        # when the profile or a memory file changes again, never on every read of a subscriber's poll.
        due.rendered_at[target.name] = seen
        ticked = render_due(settings, due.store)  # None: the lock was busy, or another target failed
        rendered = render_view(settings, due.store, target) if has_facts(due.store) else False
        return rendered or bool(ticked and ticked.rendered)

    def _profile(self, settings: Settings, profile: str) -> _Profile:
        key = (str(store_target(settings)), profile)
        with self._lock:
            found: _Profile | None = self._profiles.get(key)
            if found is None:
                found = _Profile(PersonaStore.from_settings(settings, profile=profile, prompt_path=True))
                self._profiles.put(key, found)  # the least recently used is closed past MAX_PROFILES
            return found

    def close(self) -> None:
        self._profiles.clear()  # each closed as it goes
