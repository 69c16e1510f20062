"""A fact's scope: true of the user everywhere (``global``), in one project, or for one agent (a host).

A scope is stored as text beside the fact (``project:github.com/x/y``,
``host:cursor``; nothing for global), never in Mnemosyne's own table, so
Mnemosyne's reads keep seeing every fact. A target shows a
:class:`ScopeFilter`'s facts: each host reads the scopes it should, once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from .hosts.registry import NAMES

ScopeKind = Literal["global", "project", "host"]
KINDS: tuple[ScopeKind, ...] = get_args(ScopeKind)
# Every agent a fact may be kept for: the registry's hosts (those persona-tier writes for, Hermes, MCP clients).
HOSTS: tuple[str, ...] = NAMES
if TYPE_CHECKING:  # a Literal cannot be computed for the type checker: a host name is a str to it
    HostName = str
else:  # at run time it is the registry's names, so pydantic and typer still refuse any other by name
    HostName = Literal[NAMES]
MAX_PROJECT_CHARS = 4096
GLOBAL = "global"  # how a global scope (stored as nothing) is spelled in JSON, tables and files


def spelled(scope: str | None) -> str:
    """A scope as JSON gives it: ``global``, ``project:github.com/x/y``, ``host:cursor``."""
    return GLOBAL if scope is None else scope


def project_scope(identity: str) -> str:
    return f"project:{identity}"


def host_scope(name: str) -> str:
    return f"host:{name}"


def kind_of(scope: str | None) -> ScopeKind:
    if scope is None:
        return "global"
    return "project" if scope.startswith("project:") else "host"


def value_of(scope: str | None) -> str:
    """The project's identity or the host's name ("" for global)."""
    return "" if scope is None else scope.partition(":")[2]


def shown(scope: str | None) -> str:
    """How a scope reads in messages and tables: ``global``, ``project github.com/x/y``, ``host cursor``."""
    return GLOBAL if scope is None else f"{kind_of(scope)} {value_of(scope)}"


@dataclass(frozen=True, slots=True)
class ScopeFilter:
    """Which facts a target shows: global ones or not, and those of these hosts and projects; ``beside``: the
    host whose own memory loads beside it, so the facts learned from that memory are not shown again."""

    everywhere: bool = True
    hosts: frozenset[str] = frozenset()
    projects: frozenset[str] = frozenset()
    beside: str | None = None

    def shows(self, scope: str | None) -> bool:
        if scope is None:
            return self.everywhere
        kind, _, value = scope.partition(":")
        return value in (self.projects if kind == "project" else self.hosts)

    @property
    def only_global(self) -> bool:
        return self.everywhere and not self.hosts and not self.projects

    def describe(self) -> str:
        """``global, host cursor, project github.com/x/y``: what the target shows, for `persona explain`."""
        parts = (["global"] if self.everywhere else []) + [f"host {host}" for host in sorted(self.hosts)]
        parts += [f"project {project}" for project in sorted(self.projects)]
        return ", ".join(parts) or "nothing"

    def widened(self, *, hosts: frozenset[str] = frozenset(), projects: frozenset[str] = frozenset()
                ) -> ScopeFilter:
        """This filter, also showing ``hosts`` and ``projects`` (a session's project, an MCP client's roots)."""
        return ScopeFilter(self.everywhere, self.hosts | hosts, self.projects | projects, self.beside)


GLOBAL_ONLY = ScopeFilter()
