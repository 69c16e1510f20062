"""Old names of settings that still work: each is read as its new name, with one warning naming both."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from ..warn_once import ProblemLog
from .files import ConfigLayer, Path_

log = logging.getLogger(__name__)
DEPRECATED = ProblemLog(log)

# old path -> new path
ALIASES: dict[Path_, Path_] = {
    ("store", "session"): ("store", "profile"),  # "session" now means a host's conversation only
}


def renamed(layer: ConfigLayer) -> ConfigLayer:
    """``layer`` with every old name moved to its new one (the new one wins where a source gives both)."""
    data, lines, moved = layer.data, dict(layer.lines), {}
    for old, new in ALIASES.items():
        section = data.get(old[0])
        if not isinstance(section, dict) or old[1] not in section:
            continue
        DEPRECATED.warn(f"{'.'.join(old)} (in {layer.describe(old)}) is deprecated; call it {'.'.join(new)}")
        section = dict(section)
        value = section.pop(old[1])
        section.setdefault(new[1], value)
        data = {**data, old[0]: section}
        if old in lines:
            lines.setdefault(new, lines.pop(old))
        moved[new] = old
    if not moved:
        return layer
    return dataclasses.replace(layer, data=data, lines=lines, label=_named_as_given(layer, moved))


def _named_as_given(layer: ConfigLayer, moved: dict[Path_, Path_]) -> Callable[[Path_], str] | None:
    """The layer's labels, naming a moved value by the name its source gave it (an old variable's, say)."""
    if layer.label is None:
        return None
    label = layer.label
    return lambda path: label(moved.get(path, path))
