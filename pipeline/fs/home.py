"""The Hermes home, worked out on strings with the standard library alone: one definition for the full path
(:mod:`pipeline.fs.locations` builds its paths on it) and for the fast path that replays a recorded answer
(:mod:`pipeline.deliver`), which must find the same records before anything heavy is imported.

Every variable it reads goes through :mod:`pipeline.inputs`, so a recorded answer is keyed by them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .. import inputs

# A host that serves several Hermes homes in one process (Hermes' per-task profiles) names the home for the
# current context; it wins over the environment.
_OVERRIDE: ContextVar[str | None] = ContextVar("persona_hermes_home", default=None)
_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")  # Hermes' own profile names


def hermes_home() -> str:
    """The Hermes home, resolved as Hermes resolves it: a context override, else ``$HERMES_HOME``, else the sticky
    profile that ``hermes profile use NAME`` chose (``~/.hermes/profiles/NAME``), else ``~/.hermes``."""
    override = _OVERRIDE.get()
    if override is not None:
        return override
    chosen = inputs.environ("HERMES_HOME")
    if chosen:
        return inputs.expand_user(chosen)
    root = os.path.join(user_home(), ".hermes")
    return sticky_profile(root) or root


def user_home() -> str:
    """The user's home directory (``$HOME``, else the password database); a RuntimeError where there is none."""
    home = inputs.home()
    if home == "~":
        raise RuntimeError("could not determine the home directory")
    return home


def sticky_profile(root: str) -> str | None:
    """The profile folder ``root/active_profile`` names, when it names one that exists."""
    try:
        with open(os.path.join(root, "active_profile"), encoding="utf-8") as file:
            name = file.read().strip().lower()
    except (OSError, UnicodeDecodeError):
        return None
    if not name or name == "default" or not _PROFILE_NAME.fullmatch(name):
        return None
    profile = os.path.join(root, "profiles", name)
    return profile if os.path.isdir(profile) else None


def state_folder(home: str | None = None) -> str:
    """persona-tier's own working files under the Hermes home (default: the current one), never in a project."""
    return os.path.join(home or hermes_home(), "mnemosyne", "persona-tier")


@contextmanager
def hermes_home_override(home: str | os.PathLike[str] | None) -> Iterator[None]:
    """Resolve every default path under ``home`` inside this block (no-op when None)."""
    if home is None:
        yield
        return
    token = _OVERRIDE.set(inputs.expand_user(os.fspath(home)))
    try:
        yield
    finally:
        _OVERRIDE.reset(token)
