"""A host's first persona block in a new process, with the standard library alone while nothing changed.

``PersonaInjector(load_settings()).block()`` builds the settings models before it looks at anything, and those
alone cost more than a host's whole start-up budget. :func:`first_block` asks the records first
(:mod:`pipeline.deliver`, the fast path `persona inject` uses): when the last full answer of the same request
(the same reader and working directory) still stands by every input its run read, that text is the answer; any
difference, doubt or error runs the injector exactly as before and records its block for the next process. A
running host that injects into many prompts keeps a :class:`~pipeline.inject.injector.PersonaInjector` instead:
this is for the one block a short-lived process needs.
"""

from __future__ import annotations

import os

from .. import deliver

# The request's name in the record's key: no command line has it, so a block and `persona inject` never share a
# record (their texts differ by the appendix around the block).
REQUEST = "\0first-block"


def first_block(*, profile: str | None = None, host: str | None = None,
                project: str | os.PathLike[str] | None = None) -> str:
    """The block ``PersonaInjector(load_settings(), profile=profile, reader=Reader.at(host, project)).block()``
    gives (live mode: it renders what is due first), from the last one recorded when nothing changed since."""
    request = [REQUEST, profile or "", host or "", "" if project is None else os.fspath(project)]
    try:
        recorded = deliver.lookup(request, os.getcwd())
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

    with delivery.recording() as recorded:
        settings = load_settings()
        directory: Path | None = None if project is None else Path(project)
        block = PersonaInjector(settings, profile=profile, reader=Reader.at(host, directory)).block()
    delivery.keep(recorded, block, request=request)  # an empty block may come with a warning: never kept then
    return block
