"""What Hermes 0.22's other plugins leave of the characters every plugin's prompt sections share.

Hermes renders the plugin sections in the order of their ids, each framed (``## Plugin Context: ID``, a length
line, a blank line), joined by blank lines inside a start and an end comment, and skips whole any section that
would take the lot past 8,000 characters (hermes_cli/plugins_dispatch.py, render_system_prompt_sections). So a
section of ours that took its own 4,000 would push out a later plugin's, and a plugin before ours could push
ours out, each without a word. The section therefore measures the others first, as Hermes renders them for the
same session (a plain text as it is, a callable called with the same read-only mapping, a section that raises
or is over its own ``max_chars`` counted as the nothing Hermes shows), takes only what they leave, and records
the figures for ``persona targets check`` and ``persona status`` (:func:`recorded`).

Hermes has no public call that lists the registered sections; the plugin manager's registry is read where it is
(``ctx._manager._system_prompt_sections``), and where it is not, the others are taken to leave the whole budget.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..fs.locations import state_dir
from ..fs.write import atomic_write_text, ensure_private_dir
from ..hosts.model import PromptSection

log = logging.getLogger(__name__)
# Hermes' start and end comments around every plugin's sections, and the line break after the first and before
# the last (counted once per prompt, against the shared total).
CONTAINER = len("<!-- hermes-plugin-sections:start -->") + len("<!-- hermes-plugin-sections:end -->") + 2
SEPARATOR = 2  # the blank line between two sections
RECORD = "hermes-section-room.json"

Registry = Callable[[], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Room:
    """How much of the shared characters the other plugins' sections took, and what that leaves our text."""

    others: int  # characters of the others' sections, framed, with the blank lines between them
    room: int  # characters our text may take (at most the section's own limit)
    total: int  # what every plugin's sections share, frames included


def registry_of(ctx: Any) -> Registry | None:
    """The host's registry of every plugin's sections, by id (None where the host does not show it)."""
    sections = getattr(getattr(ctx, "_manager", None), "_system_prompt_sections", None)
    return (lambda: sections) if isinstance(sections, Mapping) else None


def room_for(section: PromptSection, registry: Registry | None, info: Mapping[str, Any]) -> Room:
    """What the other sections in ``registry`` take for the session ``info`` names, and what they leave ours."""
    others = sum(len(section.frame.format(id=other_id, chars=len(text))) + len(text) + SEPARATOR
                 for other_id, text in _others(section.id, registry, info))
    widest = section.frame.format(id=section.id, chars=section.limit.amount)  # the length line at its longest
    left = section.total - CONTAINER - others - len(widest)
    return Room(others, max(0, min(section.limit.amount, left)), section.total)


def _others(ours: str, registry: Registry | None, info: Mapping[str, Any]) -> list[tuple[str, str]]:
    try:
        sections = dict(registry()) if registry is not None else {}
    except Exception as error:  # a registry that changed shape: nothing known of the others
        log.debug("persona section: could not read the other plugins' sections: %s", type(error).__name__)
        return []
    return [(other_id, text) for other_id, other in sorted(sections.items())
            if other_id != ours and (text := _shown(other, info))]


def _shown(section: Any, info: Mapping[str, Any]) -> str:
    """What Hermes shows of another plugin's section: its stripped text, or nothing where it skips it."""
    content = getattr(section, "content", "")
    try:
        value = content(info) if callable(content) else content
    except Exception:  # Hermes skips a section that raises; so do we (its text is not ours to log)
        return ""
    text = value.strip() if isinstance(value, str) else ""
    return text if len(text) <= int(getattr(section, "max_chars", len(text))) else ""


def record(home: str, room: Room) -> None:
    """Keep the last figures of ``home``'s section for ``persona targets check`` and ``status``; a failure to
    write them only loses the figures."""
    path = _record_path(Path(home))
    try:
        ensure_private_dir(path.parent)
        atomic_write_text(path, json.dumps(asdict(room)))
    except OSError as error:
        log.debug("persona section: could not record its room: %s", error)


def recorded(home: Path | None = None) -> Room | None:
    """The figures the section last recorded in ``home`` (default: the current Hermes home); None if none."""
    try:
        data = json.loads(_record_path(home).read_text(encoding="utf-8"))
        return Room(int(data["others"]), int(data["room"]), int(data["total"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _record_path(home: Path | None) -> Path:
    return state_dir(home) / RECORD
