"""A host's first persona block in a new process, with the standard library alone while nothing changed.

``PersonaInjector(load_settings()).block()`` builds the settings models before it looks at anything, and those
alone cost more than a host's whole start-up budget. :func:`first_block` asks the delivery snapshot first
(:mod:`pipeline.deliver`, the fast path `persona inject` uses): when the last full answer of the same request
(the same reader, working directory and environment) still stands by every part of its key, that text is the
answer; any difference, doubt or error runs the injector exactly as before and records its block for the next
process. A running host that injects into many prompts keeps a :class:`~pipeline.inject.injector.PersonaInjector`
instead: this is for the one block a short-lived process needs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import deliver

if TYPE_CHECKING:
    from pathlib import Path

# The request's name in the snapshot's key: no command line has it, so a block and `persona inject` never share
# a snapshot (their texts differ by the appendix around the block).
REQUEST = "\0first-block"


def first_block(*, profile: str | None = None, host: str | None = None,
                project: str | os.PathLike[str] | None = None) -> str:
    """The block ``PersonaInjector(load_settings(), profile=profile, reader=Reader.at(host, project)).block()``
    gives (live mode: it renders what is due first), from the last one recorded when nothing changed since."""
    request = [REQUEST, profile or "", host or "", "" if project is None else os.fspath(project)]
    try:
        recorded = deliver.lookup(request, os.getcwd(), os.environ)
    except Exception:  # any doubt: the injector answers, exactly as it would have
        recorded = None
    return recorded if recorded is not None else _injected(request, profile, host, project)


def _injected(request: list[str], profile: str | None, host: str | None,
              project: str | os.PathLike[str] | None) -> str:
    from pathlib import Path

    from ..config.load import load_settings
    from . import delivery
    from .injector import PersonaInjector
    from .views import Reader

    early = delivery.before_settings([])  # before the settings read the files (a change meanwhile: no record)
    settings = load_settings()
    directory: Path | None = None if project is None else Path(project)
    injector = PersonaInjector(settings, profile=profile, reader=Reader.at(host, directory))
    begun = delivery.begin(settings, profile, early=early, config_files=[], project=directory, session_id=None)
    with delivery.watching(begun):
        block = injector.block()
    if begun is not None and block:  # an empty block may come with a warning: it is never recorded
        begun.finish(block, request=request)
    return block
