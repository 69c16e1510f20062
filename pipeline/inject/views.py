"""A persona as one reader sees it: the injected target, showing also its agent's and its project's facts.

A host that calls us knows who is reading: Claude Code's hook runs in the
project, a Hermes session has a working directory, an MCP client names its
roots. The injected target (``injection.target``) shows what its settings say
(global facts, by default); a :class:`Reader` widens that by the reader's host
and project. The widened target is a *view*: the same template, budget and
cap, rendered into the database (``persona_blocks``) under a name of its own,
so it is read like any stored block (its exact token count recorded, no
tokenizer on the read path), dropped by a forget like any block, and
rendered again only when the profile's facts or the settings change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.targets import ResolvedTarget
from ..fs.locations import profile_slug
from ..fs.projects import project_of
from ..hosts.registry import keeps_memory
from ..scopes import ScopeFilter, host_scope, project_scope
from ..store import PersonaStore
from ..store.runs import newest_render
from ..warn_once import ProblemLog
from .file_source import KnownTokens
from .source import Source, open_source

if TYPE_CHECKING:  # `persona status` runs without pydantic
    from ..config.schema import Settings

VIEW_MARK = "@"  # a view's block name starts with it; a configured target's name cannot (see schema)
VIEW_DIGEST_CHARS = 24


@dataclass(frozen=True, slots=True)
class Reader:
    """Who reads the persona: an agent (a host's name) in a project (its identity); None when not known."""

    host: str | None = None
    project: str | None = None

    @classmethod
    def at(cls, host: str | None, directory: Path | None) -> Reader:
        """The reader ``host`` working in ``directory`` (its project: see :mod:`pipeline.fs.projects`)."""
        return cls(host, None if directory is None else project_of(directory).identity)

    def describe(self) -> str:
        parts = ([f"host {self.host}"] if self.host else []) + ([f"project {self.project}"] if self.project else [])
        return ", ".join(parts) or "no host, no project"


NOBODY = Reader()


def view_of(target: ResolvedTarget, reader: Reader) -> ResolvedTarget:
    """``target`` as ``reader`` sees it: the global facts, the reader's agent's and its project's, in the target's
    template and budget. The target's own host and project are not the reader's: an agent in project B that reads
    a target written for project A (an MCP resource, `injection.target`) never gets A's facts. ``target`` itself
    when it shows exactly what the reader should see."""
    if reader.host is None and reader.project is None:
        return target  # nobody in particular: the target as configured (`persona inject` with no reader)
    scopes = ScopeFilter(True, frozenset({reader.host} if reader.host else ()),
                         frozenset({reader.project} if reader.project else ()),
                         reader.host if keeps_memory(reader.host) else None)
    if scopes == target.scopes:
        return target
    name = view_name(target, reader)
    return replace(target, name=name, output="store", path=Path(f"store:{profile_slug(target.profile)}") / name,
                   region=None, scopes=scopes)


def view_name(target: ResolvedTarget, reader: Reader) -> str:
    """A view's block name: bounded whatever the project's identity, and the same for the same reader."""
    key = "\0".join((target.name, host_scope(reader.host or ""), project_scope(reader.project or "")))
    return VIEW_MARK + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:VIEW_DIGEST_CHARS]


def is_view(target: ResolvedTarget) -> bool:
    return target.name.startswith(VIEW_MARK)


def render_view(settings: Settings, store: PersonaStore, view: ResolvedTarget) -> bool:
    """Render ``view`` unless its block already holds the profile's current facts under these settings; True
    when it rendered. A failure raises PersonaError (the caller serves the last good text)."""
    from ..stages.fingerprint import config_hash

    fingerprint = config_hash(settings)
    if newest_render(store, view.path) == (store.generation(), fingerprint):
        return False
    from ..stages.runner import run_pipeline  # the render pipeline loads only when a view is rendered

    run_pipeline(settings, store=store, resolved=[view], reason=f"a view of {view.scopes.describe()}")
    return True


def has_facts(store: PersonaStore) -> bool:
    return any(store.count_by_tier().values())


class ViewSource:
    """A reader's view of the injected target, read like any source (:mod:`pipeline.inject.source`).

    It serves the view's block once :func:`refresh` has seen the profile hold
    facts, and the target's own text before that and while the profile holds
    none: a hand-written persona file beside an empty store is still served.
    """

    def __init__(self, base: Source, view: Source) -> None:
        self.base, self.view = base, view
        self.use_view = False

    def _current(self) -> Source:
        return self.view if self.use_view else self.base

    def read(self) -> str:
        return self._current().read()

    def text(self) -> str:
        return self._current().text()

    def describe(self, error: BaseException) -> str:
        return self._current().describe(error)

    def close(self) -> None:
        self.base.close()
        self.view.close()


def open_view_source(settings: Settings, base: ResolvedTarget, view: ResolvedTarget, problems: ProblemLog, *,
                     store: PersonaStore | None = None, known_tokens: KnownTokens | None = None) -> Source:
    """The source of ``view`` (:func:`view_of`): the target's own when the view is the target itself."""
    own = open_source(settings, base, problems, store=store, known_tokens=known_tokens)
    if view is base:
        return own
    return ViewSource(own, open_source(settings, view, problems, store=store))


def refresh(settings: Settings, store: PersonaStore, view: ResolvedTarget, source: Source) -> None:
    """Before a view is read where a persona is built: render it if it is behind the profile's facts, and serve
    it from now on if the profile holds any. PersonaError when the render fails (the last good text stays)."""
    if not isinstance(source, ViewSource):
        return
    if has_facts(store):
        render_view(settings, store, view)
        source.use_view = True
    else:
        source.use_view = False
