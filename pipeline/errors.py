"""The typed errors of persona-tier.

Every failure a user can cause is one of these. The CLI prints ``str(error)``
as one line and exits 1; the MCP and Hermes boundaries turn them into tool
errors. Anything else escaping the library is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "ConfigError",
    "EditConflict",
    "EditError",
    "FactsFileError",
    "ForgottenError",
    "InputError",
    "NoProfile",
    "NotFoundError",
    "PersonaError",
    "StageError",
    "StoreError",
    "StoreUnavailable",
    "TemplateError",
]


class PersonaError(Exception):
    """Root of every error persona-tier raises on purpose."""


class ConfigError(PersonaError):
    """Settings could not be loaded: bad YAML, unknown keys or bad values.

    ``problems`` holds every problem found, so a user fixes them in one pass.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        if len(self.problems) == 1:
            message = f"invalid configuration: {self.problems[0]}"
        else:
            listed = "; ".join(self.problems)
            message = f"invalid configuration ({len(self.problems)} problems): {listed}"
        super().__init__(message)


class StoreError(PersonaError):
    """The database could not be opened, read or written."""


class StoreUnavailable(StoreError):
    """The database server could not be reached, or the connection was lost; nothing was changed.

    Worth retrying: a worker retries its tick, and the next operation opens a new connection.
    """


class NotFoundError(StoreError):
    """An id that names no row (persona fact or source memory)."""


class NoProfile(PersonaError):
    """A host request that names no user the settings can give a profile to: it gets no persona."""


class FactsFileError(PersonaError):
    """A declarative facts file could not be imported; nothing was changed."""


class TemplateError(PersonaError):
    """A template could not be found, parsed or rendered."""


class StageError(PersonaError):
    """A pipeline definition or stage failed: unknown stage, bad options, bad chain."""


class InputError(PersonaError):
    """An argument to an operation is invalid: a bad tier, confidence or empty content."""


class ForgottenError(InputError):
    """A text or memory the user asked to forget was offered again (any way in) without ``force``; nothing changed."""


class EditError(PersonaError):
    """``persona edit`` applied nothing: its file has problems (``problems``: each ``(line, what)``, the line None
    where none is known), or the user left the editor without fixing them."""

    def __init__(self, message: str, problems: Iterable[tuple[int | None, str]] = ()) -> None:
        self.problems = list(problems)
        super().__init__(message)


class EditConflict(EditError):
    """The profile changed while ``persona edit``'s editor was open; nothing was applied."""
