"""After a write: render every target the write left behind, once, so no file waits for `persona render`.

Every writer (the CLI's commands, the tools, the page) calls :func:`render_after_write` once its change has
committed, for the whole write however many facts it touched. A target is due when its newest render read an
older store generation or other settings, or its file is gone; the due ones render in one run, under the
profile's lock. A target that cannot be rendered is a warning, never a failed write: the change is committed,
and the next render (a prompt's, a tick's, `persona render`) tries again.

A session's snapshot is not a target: a running session keeps its persona until its compaction (the prompt
cache), and a new one starts with the files as rendered here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..config.schema import Settings
from ..config.targets import ResolvedTarget, profile_targets
from ..errors import PersonaError
from ..stages.fingerprint import config_hash
from ..stages.runner import run_pipeline
from ..store import PersonaStore
from ..store.runs import newest_render
from ..text import counted

log = logging.getLogger(__name__)
# How long a write waits for another render of the profile: short, as a tool's answer waits with it; a render
# that holds the lock longer renders this write too, or the next read does (the store's generation moved).
WRITE_RENDER_WAIT_S = 5.0
REASON = "write"  # persona_runs.reason of these renders


@dataclass
class WriteRender:
    """What the render after a write did: the targets rendered, and each one that could not be, with why."""

    rendered: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"rendered": self.rendered, "render_warnings": self.warnings}

    def line(self) -> str:
        """The one line a writer says about it."""
        if not self.rendered:
            return "no target was rendered (see the warning)" if self.warnings else "every target was already current"
        failed = f"; {len(self.warnings)} could not be (see the warning)" if self.warnings else ""
        return f"rendered {counted(len(self.rendered), 'target')}{failed}"


def render_after_write(settings: Settings, store: PersonaStore, *,
                       wait_s: float = WRITE_RENDER_WAIT_S) -> WriteRender:
    """Render, in one run under the profile's lock, every target of the store's profile that the store's
    generation or the settings left behind; what could not be rendered is a warning, and nothing is raised."""
    try:
        due, skipped = due_targets(settings, store)
        if not due:
            return _failed(store, skipped)
        with store.profile_lock(wait_s) as held:
            if not held:
                return WriteRender(warnings=[_busy(store, wait_s)])
            done = _render(settings, store, due)
            return _failed(store, skipped + done.warnings, done.rendered) if skipped else done
    except PersonaError as error:  # the store could not be read again, the lock not taken: the write stands
        return _failed(store, [f"no target was rendered: {error} (the next render tries again)"])


def due_targets(settings: Settings, store: PersonaStore) -> tuple[list[ResolvedTarget], list[str]]:
    """The profile's targets whose newest render is not of the store's generation and these settings, or whose
    file is gone; and a warning for each target the profile has no file in (a fixed file of store.profile's)."""
    now = (store.generation(), config_hash(settings))
    targets, skipped = profile_targets(settings, store.profile)
    return [target for target in targets if not _current(store, target, now)], [found.warning() for found in skipped]


def _current(store: PersonaStore, target: ResolvedTarget, now: tuple[int, str]) -> bool:
    if not target.in_store and not target.path.exists():
        return False
    return newest_render(store, target.path) == now


def _render(settings: Settings, store: PersonaStore, due: list[ResolvedTarget]) -> WriteRender:
    """One run for every due target; when it fails, each target on its own, so one bad target (a file that is
    not ours, a locked one) keeps none of the others stale."""
    try:
        reports = run_pipeline(settings, store=store, resolved=due, reason=REASON)
        return WriteRender([report.target for report in reports])
    except PersonaError:
        log.debug("profile %s: the render after a write failed; rendering its targets one by one", store.profile,
                  exc_info=True)
    done = WriteRender()
    for target in due:
        try:
            run_pipeline(settings, store=store, resolved=[target], reason=REASON)
            done.rendered.append(target.name)
        except PersonaError as error:
            done.warnings.append(f"target {target.name!r} ({target.path}) was not rendered: {error} (the next "
                                 "render tries again)")
    return _failed(store, done.warnings, done.rendered)


def _busy(store: PersonaStore, wait_s: float) -> str:
    return (f"no target was rendered: another render of profile {store.profile!r} held its lock for {wait_s:g} s "
            "(it or the next read renders this change)")


def _failed(store: PersonaStore, warnings: list[str], rendered: list[str] | None = None) -> WriteRender:
    if warnings:  # the writer says it to the user; the log keeps it for hosts
        log.info("profile %s: the change is saved, but %s", store.profile, "; ".join(warnings))
    return WriteRender(rendered or [], warnings)
