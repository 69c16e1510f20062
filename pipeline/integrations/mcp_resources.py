"""The rendered persona as MCP resources and a prompt, with change notifications for subscribers.

``persona://{profile}/{target}`` is the text the injector would append to a
system prompt for that profile and target: the header, then the target's
capped block, read through the injector's own source (:mod:`pipeline.inject.source`),
so the same cap, budget and region rules apply. The configured profile's
targets are listed as concrete resources; the template reaches any profile
the settings allow (a target with ``{profile}`` in its path, or a block in
the store). A target whose file belongs to another profile is an MCP error
naming why, never that file's text.

Subscribers are told when a subscribed text changes: a background poll
re-reads each subscribed source at most once per ``injection.check_interval_ms``
(one stat of a file when nothing changed) and sends
``notifications/resources/updated``, over ``resources/subscribe`` for
handshake-era clients and ``subscriptions/listen`` for 2026-07-28 ones.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import anyio
import anyio.to_thread

from .. import caches
from ..clock import Throttle
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, resolve_target
from ..config.urls import store_target
from ..errors import InputError, PersonaError
from ..hosts import registry
from ..inject.prompt import appendix, shown
from ..inject.render_due import RenderBeforeRead
from ..inject.source import Source, open_source
from ..inject.views import Reader, view_of
from ..warn_once import ProblemLog

log = logging.getLogger(__name__)

MCP_AGENT = registry.MCP  # the agent whose facts every MCP read shows beside the target's (pipeline.hosts)
SCHEME = "persona://"
URI_TEMPLATE = SCHEME + "{profile}/{target}"
MIME_TYPE = "text/markdown"  # the appendix is a markdown header over the block
MAX_SOURCES = 64  # open sources kept, least recently used closed first; one per (profile, target, settings)
MAX_WATCHED = 256  # distinct subscribed URIs per server: a client cannot make the poll unbounded
MIN_POLL_S = 0.1  # check_interval_ms may be 0 (check on every call); the poll still sleeps this long
SETTINGS_EVERY_MS = 5000  # the poll re-reads the settings (a config load is ms) at most this often

def _close(key: Any, source: Source) -> None:
    source.close()


# A server's open sources: each holds its target's text as last read (its fallback when a read fails), so a forget
# anywhere drops them all (pipeline/caches.py) and the next read opens its source anew.
SOURCES = caches.per_object("mcp_resources.sources", owner="settings",
                            key="a resolved target, the store and the injection settings that read it",
                            bound=MAX_SOURCES, holds_text=True, on_evict=_close)
DISABLED = ("injection is disabled (injection.enabled = false); set injection.enabled: true in the settings, or "
            "MNEMOSYNE_PERSONA_ENABLED=1 in the server's environment (the tools work either way)")


def uri(profile: str, target: str) -> str:
    """The resource URI of ``profile``'s ``target`` (both percent-encoded, so any id is one segment)."""
    return f"{SCHEME}{quote(profile, safe='')}/{quote(target, safe='')}"


def parse_uri(text: str) -> tuple[str, str]:
    """(profile, target) of a persona URI; InputError for anything else."""
    rest = text[len(SCHEME):] if text.startswith(SCHEME) else None
    profile, _, target = (rest or "").partition("/")
    if rest is None or not profile or not target or "/" in target:
        raise InputError(f"unknown resource {text!r}; persona resources are {URI_TEMPLATE}")
    return unquote(profile), unquote(target)


class PersonaTexts:
    """The appendix of each (profile, target), read through a cached source; safe from any thread."""

    def __init__(self, settings: Callable[[], Settings]) -> None:
        self.settings = settings
        self._sources = SOURCES.new()
        self._lock = threading.Lock()  # one opener per key: a second caller waits for the first's source
        self._render_due = RenderBeforeRead()

    def listed(self) -> list[dict[str, str]]:
        """The configured profile's targets, as resources (uri, name, description)."""
        settings = self.settings()
        profile = settings.store.profile
        off = "" if settings.injection.enabled else f" Not served now: {DISABLED}."
        return [{"uri": uri(profile, name), "name": f"{profile}/{name}",
                 "description": f"The persona of profile {profile!r} from target {name!r}, exactly as the injector "
                                f"appends it to a system prompt.{off}"}
                for name in settings.targets]

    def served(self, profile: str | None, target: str | None, *, project: str | None = None) -> str:
        """What a read or the prompt answers for ``profile`` and ``target`` (None: store.profile, injection.target):
        :meth:`text`; while injection is disabled, an InputError that says so and how to enable it, rather than an
        empty text a user cannot tell from an empty persona."""
        settings = self.settings()
        profile, target = profile or settings.store.profile, target or settings.injection.target
        if not settings.injection.enabled:
            resolve_target(settings, target, profile=profile)  # a target not this profile's is refused as ever
            raise InputError(f"{uri(profile, target)} is not served: {DISABLED}")
        return self.text(profile, target, settings, project=project)

    def text(self, profile: str, target: str, settings: Settings | None = None, *, project: str | None = None
             ) -> str:
        """What the injector would append for ``profile`` and ``target`` as an MCP client reads it: the target's
        facts, the ``mcp`` agent's, and ``project``'s (the client's root; None: no project); "" when injection
        is disabled. InputError or StageError when the settings do not allow that profile or know no such target."""
        settings = settings or self.settings()
        resolved = resolve_target(settings, target, profile=profile)  # refuses another profile's file by name
        if not settings.injection.enabled:
            return ""
        read = view_of(resolved, Reader(MCP_AGENT, project))
        # Render before read, as every host's prompt path does: a fact written by anyone (a tool of this
        # server, the CLI, Mnemosyne) is in the very next read; a render makes the source read again now.
        fresh = self._render_due(settings, read)
        text = self._source(settings, read, fresh=fresh).text()
        if not text and read is not resolved:  # no facts in the store yet: the target's own (hand-written) text
            text = self._source(settings, resolved, fresh=self._render_due(settings, resolved)).text()
        return shown(appendix(settings.injection.header, text))

    def _source(self, settings: Settings, resolved: ResolvedTarget, *, fresh: bool = False) -> Source:
        # The profile is in the resolved target, so two users never share a source.
        key = (resolved, str(store_target(settings)), settings.cap.counter, settings.injection.max_file_bytes,
               settings.injection.check_interval_ms, settings.injection.poll_floor_ms)
        with self._lock:
            if fresh:  # its text is held for check_interval_ms: read it anew
                self._sources.pop(key)  # closed as it goes
            source: Source | None = self._sources.get(key)
            if source is None:
                source = open_source(settings, resolved, ProblemLog(log))
                self._sources.put(key, source)  # the least recently used is closed past MAX_SOURCES
            return source

    def close(self) -> None:
        self._sources.clear()  # each closed as it goes
        self._render_due.close()


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class _Watch:
    """One subscribed URI: who wants it, and the digest of the text they were last told about (never the text:
    a forget would have to reach it)."""

    profile: str
    target: str
    digest: str | None
    sessions: list[Any] = field(default_factory=list)  # resources/subscribe sessions (handshake era)
    listeners: int = 0  # open subscriptions/listen streams naming it (2026-07-28)


class Watcher:
    """The subscribed URIs and the poll that notifies their subscribers when their text changes."""

    def __init__(self, texts: PersonaTexts, bus: Any) -> None:
        self.texts = texts
        self.bus = bus
        self._watched: dict[str, _Watch] = {}
        self._lock = threading.Lock()
        self._settings: Settings | None = None
        self._settings_poll = Throttle(SETTINGS_EVERY_MS)

    def watch(self, resource: str, *, session: Any = None) -> None:
        """Start watching ``resource`` for ``session`` (None: a listen stream). InputError for a URI that is
        not ours or that the settings do not allow, or past :data:`MAX_WATCHED`."""
        profile, target = parse_uri(resource)
        digest = _digest(self.texts.text(profile, target))  # also the check that this profile may have it
        with self._lock:
            watch = self._watched.get(resource)
            if watch is None:
                if len(self._watched) >= MAX_WATCHED:
                    raise InputError(f"too many subscribed resources (at most {MAX_WATCHED}); unsubscribe some")
                watch = self._watched[resource] = _Watch(profile, target, digest)
            if session is None:
                watch.listeners += 1
            elif session not in watch.sessions:
                watch.sessions.append(session)

    def unwatch(self, resource: str, *, session: Any = None) -> None:
        with self._lock:
            watch = self._watched.get(resource)
            if watch is None:
                return
            if session is None:
                watch.listeners = max(watch.listeners - 1, 0)
            elif session in watch.sessions:
                watch.sessions.remove(session)
            if not watch.sessions and not watch.listeners:
                del self._watched[resource]

    async def run(self) -> None:
        """Poll until cancelled; a failing read or a gone client is logged, never the end of the server."""
        while True:
            await anyio.sleep(self._interval_s())
            try:
                changed = await anyio.to_thread.run_sync(self.changed)
            except Exception as error:  # the poll must outlive a broken config or store; it is retried
                log.warning("persona resources: the change poll failed (%s); retrying", type(error).__name__)
                log.debug("persona resources: poll traceback", exc_info=True)
                continue
            for resource, sessions in changed:
                await self._notify(resource, sessions)

    def _interval_s(self) -> float:
        settings = self._settings
        return max(settings.injection.check_interval_ms / 1000 if settings else 0.25, MIN_POLL_S)

    def changed(self) -> list[tuple[str, list[Any]]]:
        """The watched URIs whose text differs from the last one seen, each with its subscribed sessions."""
        with self._lock:
            watched = list(self._watched.items())
        if not watched:
            return []
        settings = self._current_settings()
        found = []
        for resource, watch in watched:
            try:
                text: str | None = self.texts.text(watch.profile, watch.target, settings)
            except PersonaError as error:  # e.g. the target was removed from the config: its text is gone
                log.debug("persona resources: %s is unreadable: %s", resource, error)
                text = None
            if _digest(text) != watch.digest:
                watch.digest = _digest(text)
                found.append((resource, list(watch.sessions)))
        return found

    def _current_settings(self) -> Settings:
        if self._settings_poll.take() or self._settings is None:
            self._settings = self.texts.settings()
        return self._settings

    async def _notify(self, resource: str, sessions: list[Any]) -> None:
        from mcp.server.subscriptions import ResourceUpdated

        await self.bus.publish(ResourceUpdated(uri=resource))
        for session in sessions:
            try:
                await session.send_resource_updated(resource)
            except Exception as error:  # the client went away: it no longer wants the updates
                log.info("persona resources: dropped a subscriber of %s (%s)", resource, type(error).__name__)
                self.unwatch(resource, session=session)
