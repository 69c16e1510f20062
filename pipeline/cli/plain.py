"""What every command shares that needs no typer: the global options' state and plain text output (the typer
commands import the same names from :mod:`pipeline.cli.common`)."""

from __future__ import annotations

import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..render.sanitize import inline

if TYPE_CHECKING:  # the settings and the store are imported by the commands that use them, not by --help
    from ..config.schema import Settings
    from ..schedule.after_write import WriteRender
    from ..store import PersonaStore


@dataclass
class CliState:
    """The global options, and the settings they resolve to (loaded once, when first needed)."""

    config_files: list[Path] = field(default_factory=list)
    env_name: str | None = None
    set_pairs: list[str] = field(default_factory=list)
    db: str | None = None
    debug: bool = False
    _settings: Settings | None = None

    def overrides(self) -> dict[str, Any]:
        from ..config.load import parse_overrides

        overrides = parse_overrides(self.set_pairs)
        if self.db is not None:  # --db names the database, whatever the config said: a URL or a file
            is_url = "://" in self.db
            overrides.setdefault("store", {}).update(url=self.db if is_url else None,
                                                     **({} if is_url else {"path": self.db}))
        return overrides

    def loaded(self) -> bool:
        """Whether the settings were resolved (or given) already."""
        return self._settings is not None

    def settings(self) -> Settings:
        """The settings, resolved once per command."""
        if self._settings is None:
            self._settings = self.fresh_settings()
        return self._settings

    def fresh_settings(self) -> Settings:
        """The settings resolved anew from every source (for long-running commands)."""
        from ..config.load import load_settings

        return load_settings(config_files=self.config_files or None, env_name=self.env_name,
                             overrides=self.overrides())

    def store(self, profile: str | None, *, readonly: bool = False) -> PersonaStore:
        """The profile's store; read-only commands pass ``readonly`` so they never change the database."""
        from ..store import PersonaStore

        return PersonaStore.from_settings(self.settings(), profile=profile, readonly=readonly, writer="cli")

    def render_written(self, store: PersonaStore) -> WriteRender:
        """After a write committed: every target it left behind, rendered once (see schedule/after_write.py; a
        command moves the targets in files git shares first: :func:`pipeline.cli.personal.render_written`)."""
        from ..schedule.after_write import render_after_write

        return render_after_write(self.settings(), store)

    def reload(self) -> None:
        """Read the settings again at the next use (a command changed the config file)."""
        self._settings = None


def shown(text: Any, width: int | None = None) -> str:
    """Text from the store made safe for a terminal: one line, no control characters or escapes, clipped."""
    flat = inline(str(text))
    return flat if width is None or len(flat) <= width else flat[: width - 1] + "…"


def configure_logging(debug: bool) -> None:
    # Fact text is logged only at DEBUG; the default level keeps it out.
    import logging

    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="persona: %(levelname)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain aligned text table, aligned by how wide each cell shows in a terminal (CJK takes two columns)."""
    widths = [max(width(h), *(width(r[i]) for r in rows)) if rows else width(h) for i, h in enumerate(headers)]
    lines = ["  ".join(_pad(h, w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(_pad(c, w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(lines)


def width(text: str) -> int:
    """The columns ``text`` takes in a terminal: wide and full-width characters take two, combining marks none."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, columns: int) -> str:
    return text + " " * (columns - width(text))
