"""`persona forget` and `persona profile erase`: the store's erasure, then every rendered file without it.

The store removes the rows and scrubs its pages (:mod:`pipeline.store.erasure`);
then every target of the profile is rendered again (a forced tick, under the
profile's lock), so no file, region or stored block keeps the text; last, each
target file is read back and any that still holds it is named.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..config.schema import Settings
from ..config.targets import resolve_target
from ..errors import PersonaError
from ..fs.read import read_file
from ..render import prepared
from ..render.sanitize import inline, xml
from ..store import PersonaStore
from ..store.erasure import Erasure, erase_profile, forget_fact
from .tick import tick

log = logging.getLogger(__name__)
TAKES_EFFECT = "from the next request: a forgotten fact leaves every session's persona at once"


@dataclass
class Forgotten:
    """What a forget did: the counts, the files rendered again, and any file that still holds the text."""

    erasure: Erasure
    rendered: list[str] = field(default_factory=list)
    still_holding: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {**self.erasure.to_dict(), "rendered": self.rendered, "still_holding": self.still_holding,
                "takes_effect": TAKES_EFFECT}


def text_forms(text: str) -> set[str]:
    """Every way a fact's text can appear in a render: as stored, made inline, and escaped for XML."""
    flat = inline(text)
    return {form for form in (text, flat, flat.removeprefix("\\"), xml(flat)) if form}


def forget(settings: Settings, store: PersonaStore, persona_id: int) -> Forgotten:
    """Forget one fact of the store's profile, everywhere (NotFoundError for an id it does not hold)."""
    fact, erasure = forget_fact(store, persona_id, text_forms)
    done = _rerender(settings, store, erasure)
    done.still_holding = _holding(settings, store, text_forms(fact.content))
    return done


def erase(settings: Settings, store: PersonaStore) -> Forgotten:
    """Erase everything the store's profile holds; its files are rendered again, empty of facts."""
    facts = store.list()
    done = _rerender(settings, store, erase_profile(store))
    needles = set().union(*(text_forms(fact.content) for fact in facts)) if facts else set()
    done.still_holding = _holding(settings, store, needles)
    return done


def _rerender(settings: Settings, store: PersonaStore, erasure: Erasure) -> Forgotten:
    prepared.drop((store.label, store.profile))  # this process's memo of the profile's fact texts
    result = tick(settings, store=store, force=True)
    return Forgotten(erasure, [report.target for report in result.reports])


def _holding(settings: Settings, store: PersonaStore, needles: set[str]) -> list[str]:
    """Target files of the profile that still hold any of ``needles`` (a file we could not write, say)."""
    held = []
    for name in settings.targets:
        try:
            target = resolve_target(settings, name, profile=store.profile)
        except PersonaError:  # a shared file target this profile has no file in
            continue
        if target.output == "store" or not needles:
            continue
        try:
            data = read_file(target.path, settings.injection.max_file_bytes).data.decode("utf-8", "replace")
        except OSError:
            continue
        if any(needle in data for needle in needles):
            held.append(str(target.path))
    if held:
        log.warning("profile %s: after the forget, %d file(s) still hold the text: %s", store.profile, len(held),
                    ", ".join(held))
    return held
