"""Where templates live, and the one way any of them is read: the loader, the render child and fingerprints.

Every reader of a template file goes through :func:`read_template`, so a
name is confined to the template directories (no absolute name, no ``..``,
no symlink out of them) and the file is opened like a persona file: regular
files only, without blocking on a FIFO, and never more than
:data:`MAX_TEMPLATE_BYTES`. It needs no Jinja, so a trigger check stays light.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import caches, inputs
from ..errors import TemplateError
from ..fs.locations import package_dir, package_root
from ..fs.read import describe, read_file, state_key

# A template is a page of markup; a bound keeps a huge file (or /dev/zero behind a race) out of memory.
MAX_TEMPLATE_BYTES = 1 << 20


@caches.memo("template_sources.builtin_template_dir", owner="process", key="none: the package's own folder", bound=1)
def builtin_template_dir() -> Path:
    """``templates/`` beside the package in a checkout, or inside it when installed from a wheel."""
    packaged = package_dir() / "_templates"
    return packaged if packaged.is_dir() else package_root() / "templates"


def search_path(user_dirs: Sequence[Path]) -> tuple[str, ...]:
    """User directories first, so a user template of the same name wins; the built-in ones last."""
    return (*(inputs.expand_user(str(d)) for d in user_dirs), str(builtin_template_dir()))


@dataclass(frozen=True, slots=True)
class TemplateFile:
    """A template's source and where it was found: ``path`` as searched (under its directory), ``real`` resolved."""

    path: str
    real: str
    source: str
    key: tuple[int, int, int, int]

    def uptodate(self) -> Callable[[], bool]:
        """For Jinja's cache: whether the file is still in the state it was read in (a stat, no read)."""
        return lambda: _stat_key(self.real) == self.key


def read_template(search: Sequence[str], name: str) -> TemplateFile:
    """The first file called ``name`` in ``search``; a TemplateError says why there is none."""
    found = find_template(search, name)
    if found is None:
        raise TemplateError(not_found(search, name))
    return found


def find_template(search: Sequence[str], name: str) -> TemplateFile | None:
    """The first file called ``name`` in ``search``, None if no directory has one.

    A file that exists but cannot be used (a FIFO, a device, a symlink out of
    the directories, too large, not UTF-8) is a TemplateError, not a reason to
    fall through to a template of the same name further down the path.
    """
    parts = _name_parts(name)
    roots = tuple(map(_real_dir, search))
    for directory in search:
        found = _read_in(directory, parts, roots, name)
        if found is not None:
            return found
    return None


def template_source(user_dirs: list[Path], name: str) -> str:
    """The template's source, for fingerprints; a TemplateError, as render would raise, if it cannot be used."""
    return read_template(search_path(user_dirs), name).source


MAX_TEMPLATE_FILES = 1000  # a template directory is a handful of files: past this it is something else


def every_source(user_dirs: Sequence[Path]) -> tuple[tuple[str, str], ...]:
    """Every template a render could load, by name, as the search path gives it (a user's file wins over a
    shipped one): a template's ``include``, ``import`` and ``extends`` reach any of them, by any name, so a
    fingerprint holds them all. A file that cannot be used stands as why (the render that loads it says so,
    where it is loaded); a directory past :data:`MAX_TEMPLATE_FILES` is a TemplateError."""
    search = search_path(user_dirs)
    names: set[str] = set()
    for directory in search:
        names.update(_names_under(directory, directory))
        if len(names) > MAX_TEMPLATE_FILES:
            raise TemplateError(f"template directory {directory} holds more than {MAX_TEMPLATE_FILES} files; "
                                "give render.template_dirs directories that hold only templates")
    return tuple((name, _source_or_why(search, name)) for name in sorted(names))


def _source_or_why(search: Sequence[str], name: str) -> str:
    try:
        return read_template(search, name).source
    except TemplateError as error:
        return f"\0{error}"


def _names_under(root: str, folder: str) -> list[str]:
    """The relative names of the files under ``folder`` (hidden ones and Python's caches left out)."""
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as error:
        raise TemplateError(f"template directory {folder} cannot be listed: {error.strerror}") from None
    found = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name == "__pycache__":
            continue
        if entry.is_dir(follow_symlinks=False):
            found += _names_under(root, entry.path)
        else:
            found.append(os.path.relpath(entry.path, root).replace(os.sep, "/"))
    return found


def _name_parts(name: str) -> list[str]:
    if "\0" in name:
        raise TemplateError(f"template {name!r}: a name cannot contain a NUL character")
    if name.startswith(("/", "\\")) or os.path.isabs(name):
        raise TemplateError(f"template {name!r}: an absolute name; give a name inside the template directories")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts or not parts:
        raise TemplateError(f"template {name!r}: a name must stay inside the template directories (no '..')")
    return parts


@caches.memo("template_sources.builtin_real_dir", owner="process", key="none: the package's own folder, resolved",
             bound=1)
def builtin_real_dir() -> str:
    """The shipped templates' directory, resolved once: it is part of the installed package."""
    return os.path.realpath(builtin_template_dir())


def is_shipped(real: str) -> bool:
    """Whether a resolved template path is one of the shipped (trusted) templates."""
    return real.startswith(builtin_real_dir() + os.sep)


def _real_dir(directory: str) -> str:
    # A user's directory is resolved on every lookup (a symlink may move); the package's own is not.
    return builtin_real_dir() if directory == str(builtin_template_dir()) else os.path.realpath(directory)


def _read_in(directory: str, parts: list[str], roots: tuple[str, ...], name: str) -> TemplateFile | None:
    path = os.path.normpath(os.path.join(directory, *parts))
    real = _builtin_real(path) if directory == str(builtin_template_dir()) else os.path.realpath(path)
    try:
        here = os.lstat(path)  # what os.path.lexists asks
    except (OSError, ValueError):
        return None
    if not any(real.startswith(root + os.sep) for root in roots):
        raise TemplateError(f"template {name!r} at {path} resolves to {real}, outside the template directories")
    cached: TemplateFile | None = _SOURCES.get(real)
    # With no symlink on the way (the path is its own real path), that lstat is the file's stat.
    now = _key_of(here) if real == path and not stat.S_ISLNK(here.st_mode) else _stat_key(real)
    if cached is not None and cached.key == now:
        return TemplateFile(path, real, cached.source, cached.key)
    found = _read(path, real, name)
    _SOURCES.put(real, found)
    return found


@caches.memo("template_sources.builtin_real", owner="process", key="a shipped template's path", bound=64)
def _builtin_real(path: str) -> str:
    return os.path.realpath(path)


def _read(path: str, real: str, name: str) -> TemplateFile:
    try:
        read = read_file(Path(real), MAX_TEMPLATE_BYTES)  # the persona-file opener: non-blocking, regular only
        if read.truncated:
            raise TemplateError(f"template {name!r} at {path} is larger than {MAX_TEMPLATE_BYTES} bytes")
        return TemplateFile(path, real, read.data.decode("utf-8"), read.key)
    except OSError as error:
        raise TemplateError(f"template {name!r} at {path} cannot be used: it {describe(error)}") from None
    except UnicodeDecodeError as error:
        raise TemplateError(f"template {name!r} at {path} is not UTF-8 (byte {error.start})") from None


def _stat_key(real: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(real)
    except OSError:
        return None
    return _key_of(info)


def _key_of(info: os.stat_result) -> tuple[int, int, int, int] | None:
    return state_key(info) if stat.S_ISREG(info.st_mode) else None


def not_found(search: Sequence[str], name: str) -> str:
    """Why ``name`` is missing: each user directory with its reason, then the built-in ones."""
    reasons = [f"{d} (no such directory)" if not os.path.isdir(d) else f"{d} (no file {name})" for d in search[:-1]]
    builtin = f"the built-in templates ({search[-1]})"
    return f"template {name!r} not found in {', '.join([*reasons, builtin]) if reasons else builtin}"


# The newest source per resolved file, so a trigger check costs a stat, not a read.
_SOURCES = caches.cache("template_sources.sources", owner="process", key="a template file's resolved path",
                        bound=MAX_TEMPLATE_FILES, holds_text=False)
