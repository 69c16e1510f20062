"""The settings fingerprint: what a run records, so a changed config or template makes the next tick render."""

from __future__ import annotations

import hashlib
import json

from ..config.schema import Settings
from ..render.template_sources import template_source


def config_hash(settings: Settings) -> str:
    """A hash of the settings and of every target's template source."""
    digest = hashlib.sha256(settings.model_dump_json().encode())
    for name in sorted(settings.targets):
        source = template_source(settings.render.template_dirs, settings.targets[name].template)
        digest.update(json.dumps([name, source]).encode())
    return digest.hexdigest()
