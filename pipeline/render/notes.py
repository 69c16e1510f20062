"""The truncation note: what a cap appends when facts are left out."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from ..config.targets import ResolvedTarget
from .template_sources import search_path


def truncation_note(target: ResolvedTarget) -> str:
    """The configured note, else the template's own (its ``truncation_note`` macro)."""
    if target.note is not None:
        return target.note
    from .jinja import template_note  # Jinja only when a cap actually cuts

    return template_note(search_path([Path(d) for d in target.template_dirs]), target.template)


def lazy_note(target: ResolvedTarget) -> partial[str]:
    """The target's truncation note, asked for only when a cap cuts something."""
    return partial(truncation_note, target)
