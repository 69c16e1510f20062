"""Default locations, resolved from the environment each time they are asked for.

Every default path hangs off one Hermes home, so the CLI, the Hermes provider
and the Hermes plugin agree on the database, the config and the persona file.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from .banks import BankChoice, mnemosyne_database

# A host that serves several Hermes homes in one process (Hermes' per-task
# profiles) names the home for the current context; it wins over the environment.
_HOME_OVERRIDE: ContextVar[Path | None] = ContextVar("persona_hermes_home", default=None)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")  # Hermes' own profile names


HERMES_PLUGIN = "persona"  # our plugin's directory under Hermes' plugins/, its provider name and plugins.enabled entry


def hermes_plugin_dir(home: Path | None = None) -> Path:
    """Where `persona hermes install` writes our plugin in Hermes' home (default: the current one)."""
    return (home or hermes_home()).expanduser() / "plugins" / HERMES_PLUGIN


def hermes_home() -> Path:
    """The Hermes home, resolved as Hermes resolves it.

    A context override, else ``$HERMES_HOME``, else the sticky profile that
    ``hermes profile use NAME`` chose (``~/.hermes/profiles/NAME``), else
    ``~/.hermes``. Asked every time (a render asks it for its lock), so it is
    worked out on strings, with the file system asked as before.
    """
    override = _HOME_OVERRIDE.get()
    if override is not None:
        return override
    if os.environ.get("HERMES_HOME"):
        return Path(os.environ["HERMES_HOME"]).expanduser()
    root = os.path.join(_user_home(), ".hermes")
    return _as_path(_sticky_profile(root) or root)


def _user_home() -> str:
    home = os.path.expanduser("~")
    return home if home != "~" else str(Path.home())  # Path.home() raises where no home can be found


@functools.lru_cache(maxsize=64)
def _as_path(text: str) -> Path:
    """A path for a string (a pure function, kept for the few homes a process sees)."""
    return Path(text)


def _sticky_profile(root: str) -> str | None:
    try:
        with open(os.path.join(root, "active_profile"), encoding="utf-8") as file:
            name = file.read().strip().lower()
    except (OSError, UnicodeDecodeError):
        return None
    if not name or name == "default" or not _PROFILE_NAME.fullmatch(name):
        return None
    profile = os.path.join(root, "profiles", name)
    return profile if os.path.isdir(profile) else None


@contextmanager
def hermes_home_override(home: str | os.PathLike[str] | None) -> Iterator[None]:
    """Resolve every default path under ``home`` inside this block (no-op when None)."""
    if home is None:
        yield
        return
    token = _HOME_OVERRIDE.set(Path(home).expanduser())
    try:
        yield
    finally:
        _HOME_OVERRIDE.reset(token)


def default_config_path() -> Path:
    """The YAML file read when no other is named."""
    return hermes_home() / "mnemosyne" / "persona.yaml"


def default_db_path() -> Path:
    """The database Mnemosyne writes for this home: its bank's when ``profile_isolation`` is on."""
    return default_database().path


def default_database() -> BankChoice:
    """:func:`default_db_path` with the reason (the bank, the file that turned banks on)."""
    return mnemosyne_database(hermes_home())


def state_dir(home: Path | None = None) -> Path:
    """persona-tier's own working files (lock files, hook backups): under the Hermes home (default: the current
    one), never in a project."""
    return (home or hermes_home()) / "mnemosyne" / "persona-tier"


def default_persona_file() -> Path:
    """The persona file the default target writes and the injector reads."""
    return hermes_home() / "memory" / "persona.md"


# Leaves 135 of a file name's 255 bytes for the text around {profile} (``persona-{profile}.md``).
PROFILE_SLUG_MAX = 120


def profile_slug(profile: str) -> str:
    """A profile id as one safe path component: ``{profile}`` in a target path expands to this.

    Letters, digits, ``.``, ``_`` and ``-`` stay; anything else becomes
    ``%XX``, so two different profiles never share a file and no profile can
    climb out of its directory. A slug longer than :data:`PROFILE_SLUG_MAX`
    characters (a profile id may have 1,000, a file name only 255 bytes) is
    cut to a prefix and ``~`` and 32 hex digits of the id's SHA-256. ``~`` is
    itself escaped in a slug that is not cut, so a cut slug never equals
    another profile's, and two ids that differ only after the cut differ in
    the hash.
    """
    slug = _UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass")), profile)
    if len(slug) > PROFILE_SLUG_MAX:
        import hashlib  # only for a long id; --help imports this module

        return _cut(slug) + "~" + hashlib.sha256(profile.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return slug if slug.strip(".") else slug.replace(".", "%2E")


def _cut(slug: str) -> str:
    prefix = slug[:PROFILE_SLUG_MAX - 33]
    escape = prefix.find("%", len(prefix) - 2)  # never keep half of a %XX escape
    return prefix if escape == -1 else prefix[:escape]


def package_version() -> str:
    """This installation's version (``persona --version``, the MCP server's info)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("persona-tier")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


def package_dir() -> Path:
    """The installed ``pipeline`` package's own directory (its data files sit inside it in a wheel): where this
    module's folder sits, as ``importlib.resources.files("pipeline")`` finds it, without importing that."""
    return Path(__file__).parent.parent


def package_root() -> Path:
    """The directory that holds the ``pipeline`` package: what a child process needs on ``sys.path``."""
    return package_dir().parent
