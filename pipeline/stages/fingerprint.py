"""The settings fingerprint: what a run records, so a changed config or template makes the next tick render.

Only what changes a render's output counts. The CLI and the Hermes plugin read
the same files but differ in the rest: the plugin forces injection on in
session mode, names the user's profile, and may open the store with other
timeouts. Were those counted, every render by one would make the other's
``config_changed`` trigger fire for nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from .. import caches
from ..render.template_sources import every_source, template_source

if TYPE_CHECKING:  # `persona status` asks for the hash of settings read without pydantic
    from ..config.schema import Settings

# The sections (and the few single keys) a render's output depends on.
OUTPUT_SECTIONS = frozenset({"targets", "cap", "render", "pipeline", "retention", "supersede"})
OUTPUT_KEYS = {"store": {"max_fact_chars"}, "injection": {"file"}}  # injection.file: the default target path


def output_settings(settings: Settings) -> dict[str, Any]:
    """The part of the settings that changes what a render writes, as plain JSON values."""
    return settings.model_dump(mode="json", include={**{name: True for name in OUTPUT_SECTIONS}, **OUTPUT_KEYS})


def output_json(settings: Settings) -> bytes:
    """The output-changing settings as the hash reads them (``persona status`` records them)."""
    return json.dumps(output_settings(settings), sort_keys=True).encode()


def config_hash(settings: Settings) -> str:
    """A hash of the output-changing settings and of every template a render could load (each target's, and
    whatever they include, import or extend: :func:`~pipeline.render.template_sources.every_source`).

    The settings part is made once per (frozen) settings object; the templates are looked at every time,
    so an edited template changes the hash at once.
    """
    for target in settings.targets.values():  # a target's own template missing or refused: its error, at once
        template_source(settings.render.template_dirs, target.template)
    return _digest(settings.derived("output_json", output_json), every_source(settings.render.template_dirs))


@caches.memo("fingerprint.digest", owner="settings", key="the settings' output JSON and every template source",
             bound=64)
def _digest(output_json: bytes, sources: tuple[tuple[str, str], ...]) -> str:
    digest = hashlib.sha256(output_json)
    for name, source in sources:
        digest.update(json.dumps([name, source]).encode())
    return digest.hexdigest()
