"""Every host persona-tier knows, by scope name: the one list the rest of the package reads.

A new host is one module beside this one, declaring its :class:`~pipeline.hosts.model.Host`, and one line here.
The order is the order users see them in (``--host``'s choices, an unknown host's message).
"""

from __future__ import annotations

from . import (
    amp,
    claude_code,
    cline,
    codex,
    continue_,
    copilot,
    cursor,
    gemini,
    goose,
    hermes,
    kilo,
    kiro,
    mcp,
    opencode,
    roo,
    windsurf,
    zed,
)
from .model import Hook, Host, Limit, Preset, PromptSection

HOSTS: dict[str, Host] = {host.name: host for host in (
    hermes.HOST, claude_code.HOST, codex.HOST, gemini.HOST, copilot.HOST, cursor.HOST, windsurf.HOST, cline.HOST,
    continue_.HOST, kiro.HOST, roo.HOST, opencode.HOST, amp.HOST, zed.HOST, goose.HOST, kilo.HOST,
    mcp.HOST)}
NAMES: tuple[str, ...] = tuple(HOSTS)
HERMES = hermes.NAME  # the agent a `host` scope names for Hermes
MCP = mcp.NAME  # the agent a `host` scope names over MCP


def presets() -> dict[str, Preset]:
    """Every host's presets by name, host by host (each host's main preset first)."""
    return {name: preset for host in HOSTS.values() for name, preset in host.presets.items()}


def rules_variants() -> dict[str, str]:
    """Host name -> the preset `targets add HOST --rules` means."""
    return {host.name: host.rules_variant for host in HOSTS.values() if host.rules_variant is not None}


def main_presets() -> tuple[str, ...]:
    """The presets `targets add` names (a rules variant is reached through its host's --rules)."""
    variants = set(rules_variants().values())
    return tuple(name for name in presets() if name not in variants)


def hooks() -> dict[str, Hook]:
    """Host name -> its session-start hook, for the hosts that have one."""
    return {host.name: host.hook for host in HOSTS.values() if host.hook is not None}


def hook_limits() -> dict[str, tuple[Limit, ...]]:
    """Host name -> its hook's limits on the text the hook prints."""
    return {name: hook.limits for name, hook in hooks().items()}


def sections() -> dict[str, PromptSection]:
    """Host name -> the plugin prompt section it renders, for the hosts that have one."""
    return {host.name: host.section for host in HOSTS.values() if host.section is not None}


def learners() -> tuple[str, ...]:
    """The hosts that keep a memory of their own `persona learn` reads."""
    return tuple(host.name for host in HOSTS.values() if host.memory)


def offered_by_init() -> tuple[str, ...]:
    """The hosts `persona init` adds a user-level preset for when their folder exists."""
    return tuple(host.name for host in HOSTS.values() if host.offered_by_init)


def display_name(name: str) -> str | None:
    """The host's name as people write it (None for a name that is no host)."""
    host = HOSTS.get(name)
    return None if host is None else host.display


def spelled(names: tuple[str, ...], last: str = "or") -> str:
    """``a, b or c``: names in a help text."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"
