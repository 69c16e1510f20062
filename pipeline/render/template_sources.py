"""Where templates live, and their sources: what needs no Jinja (trigger checks, fingerprints)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from ..fs.locations import package_dir, package_root


@lru_cache(maxsize=1)
def builtin_template_dir() -> Path:
    """``templates/`` beside the package in a checkout, or inside it when installed from a wheel."""
    packaged = package_dir() / "_templates"
    return packaged if packaged.is_dir() else package_root() / "templates"


def search_path(user_dirs: Sequence[Path]) -> tuple[str, ...]:
    """User directories first, so a user template of the same name wins; the built-in ones last."""
    return (*(str(Path(d).expanduser()) for d in user_dirs), str(builtin_template_dir()))


def template_source(user_dirs: list[Path], name: str) -> str:
    """The template's source, for fingerprints; "<missing NAME>" if it cannot be read (render says why).

    Remembered by the file's state, so a trigger check costs a stat, not a read.
    """
    for directory in search_path(user_dirs):
        path = os.path.join(directory, name)
        try:
            info = os.stat(path)
        except OSError:
            continue
        key = (path, info.st_mtime_ns, info.st_size, info.st_ino)
        if key not in _SOURCES:
            try:
                with open(path, encoding="utf-8") as handle:
                    _SOURCES[key] = handle.read()
            except (OSError, UnicodeDecodeError):
                return f"<missing {name}>"
        return _SOURCES[key]
    return f"<missing {name}>"


_SOURCES: dict[tuple[str, int, int, int], str] = {}
