"""The typed errors of persona-tier, one home for all of them (as copier's ``errors.py``).

Every failure a user can cause is one of these. The CLI prints ``str(error)``
as one line and exits 1; the MCP and Hermes boundaries turn them into tool
errors. Anything else escaping the library is a bug. Which floor raises which:
docs/architecture.md, "Errors by layer".
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AnotherProfilesFile",
    "ConfigError",
    "EditConflict",
    "EditError",
    "FactsFileError",
    "FileSystemError",
    "ForgottenError",
    "InputError",
    "LockedError",
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
    """Settings (or a file persona-tier installs or configures, such as a host's) could not be loaded or written:
    bad YAML, unknown keys or bad values, a settings file that cannot be read or written, or an unknown token
    counter. The message begins ``invalid configuration:``.

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
    """The database could not be opened, read or written: a driver failure, a database opened read-only, a
    schema persona-tier cannot use."""


class StoreUnavailable(StoreError):
    """The database server could not be reached, or the connection was lost; nothing was changed.

    Worth retrying: a worker retries its tick, and the next operation opens a new connection.
    """


class NotFoundError(StoreError):
    """An id that names no row of the profile: a persona fact (current, superseded or demoted), a source memory,
    a tombstone or a proposal."""


class NoProfile(PersonaError):
    """A host request that names no user the settings can give a profile to: it gets no persona."""


class FactsFileError(PersonaError):
    """A source to import (a facts file, or any import format's) could not be read or parsed; nothing was
    changed."""


class TemplateError(PersonaError):
    """A template could not be found, parsed or rendered (or ran past its time or memory)."""


class StageError(PersonaError):
    """A pipeline could not be planned or run: an unknown stage, bad stage options, a chain whose types do not
    fit; a stage or an import format registered under a name another already holds (a plugin's mistake, which
    no setting can fix); a target to render that the settings do not define (a name a caller gave: the settings'
    own names are checked as they load, a :class:`ConfigError`); or, as :class:`FileSystemError`, a file the
    render writes."""


class FileSystemError(StageError):
    """A file a render writes, or an injector reads, could not be used: it is not a regular file, cannot be
    read or written (permission, space), is locked by another render, is too large, kept changing while it was
    written, holds text persona-tier did not write, or its persona-tier region markers are broken (or missing,
    for the injector); nothing was written. Raised by :mod:`pipeline.fs` and the write stage.

    A :class:`StageError`, because each of these stops the write stage, the render's last step, for its target
    (a render is what writes these files; the injector and the importer catch it and say so their own way).
    """


class InputError(PersonaError):
    """An argument to an operation is invalid: a bad id, tier, confidence or topic, empty content, a tool call's
    arguments, an unknown host, or a path persona-tier refuses to write (another target's file, the settings)."""


class AnotherProfilesFile(InputError):
    """A target's one file (no ``{profile}`` in its path) belongs to store.profile, and was asked of another
    profile: one user's facts never reach another user's file."""


class ForgottenError(InputError):
    """A text or memory the user asked to forget was offered again (any way in) without ``force``; nothing changed."""


class LockedError(InputError):
    """An agent tool asked to replace, demote, merge or forget a fact the user locked (``persona lock``); nothing
    changed."""


class EditError(PersonaError):
    """``persona edit`` applied nothing: its file has problems (``problems``: each ``(line, what)``, the line None
    where none is known), or the user left the editor without fixing them."""

    def __init__(self, message: str, problems: Iterable[tuple[int | None, str]] = ()) -> None:
        self.problems = list(problems)
        super().__init__(message)


class EditConflict(EditError):
    """The profile changed while ``persona edit``'s editor was open; nothing was applied."""


def extra_needed(what: str, extra: str) -> str:
    """The one line for a command whose optional extra is not installed: how to add it however persona-tier was
    installed (pip, pipx, uv tool; from a checkout, a wheel or an index), never a path that may not exist."""
    return (f"{what} needs persona-tier's optional extra '{extra}': pip install 'persona-tier[{extra}]' in the "
            f"environment persona-tier is installed in, or install it again with the extra: pipx install --force "
            f"'SOURCE[{extra}]' or uv tool install --force 'SOURCE[{extra}]' (SOURCE: the checkout or wheel you "
            "installed from; `make install` in a checkout has every extra)")
