"""Host presets: the target each coding agent's own instruction file needs (`persona targets add HOST`).

A view of the hosts' own declarations (``pipeline/hosts/``, one module per host): each budget follows the host's
documented limit where it has one, beside its source there; docs/hosts.md says why each is what it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import caches
from ..hosts import registry
from ..hosts.model import Limit, Preset

if TYPE_CHECKING:  # the settings' models, made when a limit is used: `persona status` runs without pydantic
    from .sections import HostLimit

__all__ = ["PRESETS", "RULES_VARIANTS", "Preset", "hook_limits", "host_limits", "preset_path", "project_dir",
           "project_file", "section_limits"]


def host_limits(limits: tuple[Limit, ...]) -> tuple[HostLimit, ...]:
    """A host's limits as a target's settings validate them."""
    from .sections import HostLimit

    return tuple(HostLimit.model_validate(limit.as_dict()) for limit in limits)


@caches.memo("presets.hook_limits", owner="process", key="none: the hosts' registry, read once", bound=1)
def hook_limits() -> dict[str, tuple[HostLimit, ...]]:
    """Each host's limits on its session-start hook's text."""
    return {host: host_limits(limits) for host, limits in registry.hook_limits().items()}


@caches.memo("presets.section_limits", owner="process", key="none: the hosts' registry, read once", bound=1)
def section_limits() -> dict[str, tuple[HostLimit, ...]]:
    """A host's plugin prompt section (Hermes 0.22 and later): the limit on our text, the host's frame not
    counted."""
    return {host: host_limits((section.limit,)) for host, section in registry.sections().items()}


PRESETS: dict[str, Preset] = registry.presets()
RULES_VARIANTS: dict[str, str] = registry.rules_variants()  # `targets add claude-code --rules`


def preset_path(name: str, *, project: Path | None, user: bool, home: Path) -> Path:
    """Where preset ``name`` writes: the user's own file (``user``) or the project's; ValueError if it has none."""
    preset = PRESETS[name]
    if user:
        if preset.user_file is None:
            raise ValueError(f"{preset.host} has no per-user instruction file; use --project DIR")
        return home / preset.user_file
    return project_file(preset, project_dir(project))


def project_file(preset: Preset, project: Path) -> Path:
    """The preset's file in ``project``: where the host loads only the first of several files (Zed), the first
    that is there, so ours is the one it loads and the user's stays loaded; else the preset's own."""
    found = (project / name for name in preset.first_of)
    return next((path for path in found if path.is_file()), project / preset.project_file)


def project_dir(project: Path | None) -> Path:
    """The project directory a preset's project file goes in (default: the working directory)."""
    return (project or Path.cwd()).resolve()
