"""Default locations, resolved from the environment each time they are asked for.

Every default path hangs off one Hermes home, so the CLI, the Hermes provider
and the Hermes plugin agree on the database, the config and the persona file.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import caches, inputs
from . import home
from .banks import BankChoice, mnemosyne_database
from .home import hermes_home_override, state_folder

__all__ = ["hermes_home_override"]  # re-exported: the Hermes binding and installer name the home for a block

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


HERMES_PLUGIN = "persona"  # our plugin's directory under Hermes' plugins/, its provider name and plugins.enabled entry


def hermes_plugin_dir(home: Path | None = None) -> Path:
    """Where `persona hermes install` writes our plugin in Hermes' home (default: the current one)."""
    return inputs.expanded(home or hermes_home()) / "plugins" / HERMES_PLUGIN


def hermes_home() -> Path:
    """The Hermes home, resolved as Hermes resolves it (:func:`pipeline.fs.home.hermes_home`). Asked every time (a
    render asks it for its lock), so it is worked out on strings, with the file system asked as before."""
    return _as_path(home.hermes_home())


_PATHS = caches.cache("locations.paths", owner="process", key="a home's path as text", bound=64, holds_text=False)


def _as_path(text: str) -> Path:
    """A path for a string (a pure function, kept for the few homes a process sees)."""
    path: Path = _PATHS.get_or_make(text, lambda: Path(text))
    return path


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
    """persona-tier's own working files (lock files, records): under the Hermes home (default: the current one),
    never in a project (:func:`pipeline.fs.home.state_folder`)."""
    return Path(state_folder(None if home is None else str(home)))


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
