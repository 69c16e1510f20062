"""Mnemosyne's memory banks: which database Mnemosyne writes for one Hermes home.

Mnemosyne 3.15 (``hermes_memory_provider`` and ``mnemosyne/core/banks.py``)
keeps every Hermes profile's memories in its own SQLite file when
``profile_isolation`` is on. The persona store must read and write the same
file, or it promotes from, and counts memories in, a database nobody writes.
This module repeats Mnemosyne's rules, read-only and without importing it:

- ``profile_isolation`` comes from ``memory.mnemosyne.profile_isolation`` in
  the Hermes ``config.yaml``, else from Mnemosyne's own ``config.yaml``
  (``$MNEMOSYNE_DATA_DIR/config.yaml``, else ``<home>/mnemosyne/config.yaml``);
  ``true``/``1``/``yes``/``on`` count as true. Off by default.
- The bank is Hermes' profile name for the home (``~/.hermes`` -> ``default``,
  ``~/.hermes/profiles/NAME`` -> ``NAME``, see :func:`hermes_profile_name`),
  passed through Mnemosyne's bank-name sanitizer; for ``default`` Mnemosyne
  uses the home's basename instead (``/opt/data`` -> bank ``data``).
- The database is ``<data_dir>/banks/<bank>/mnemosyne.db``; the ``default``
  bank keeps ``<data_dir>/mnemosyne.db``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import inputs

_TRUE = ("true", "1", "yes", "on")
_PROFILE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_BANK_MAX = 64


@dataclass(frozen=True)
class BankChoice:
    """The Mnemosyne database for one home, and why it is that one."""

    path: Path
    bank: str | None  # None: profile_isolation is off, Mnemosyne's single database
    source: Path | None  # the config.yaml that turned profile_isolation on

    def describe(self) -> str:
        """One line for ``persona status`` and ``persona hermes install``."""
        if self.bank is None:
            return f"database: {self.path} (Mnemosyne's database; profile_isolation off)"
        return f"database: {self.path} (Mnemosyne bank {self.bank}, profile_isolation on in {self.source})"


def data_dir(home: Path) -> Path:
    """Mnemosyne's data directory for ``home`` (``$MNEMOSYNE_DATA_DIR`` wins, as in Mnemosyne)."""
    if chosen := inputs.environ("MNEMOSYNE_DATA_DIR"):
        return inputs.expanded(Path(chosen))
    return home / "mnemosyne" / "data"


def mnemosyne_database(home: Path) -> BankChoice:
    """The database Mnemosyne's Hermes provider opens for ``home``."""
    source = isolation_source(home)
    root = data_dir(home)
    if source is None:
        return BankChoice(root / "mnemosyne.db", None, None)
    bank = bank_name(home)
    path = root / "mnemosyne.db" if bank == "default" else root / "banks" / bank / "mnemosyne.db"
    return BankChoice(path, bank, source)


def isolation_source(home: Path) -> Path | None:
    """The config file that turns ``profile_isolation`` on, or None when it is off (the first file naming it wins)."""
    hermes = home / "config.yaml"
    value = _lookup(_load(hermes), ("memory", "mnemosyne", "profile_isolation"))
    if value is not None:
        return hermes if _truthy(value) else None
    own = _own_config(home)
    document = _load(own)
    value = _lookup(document, ("profile_isolation",))
    if value is None:
        value = _lookup(document, ("memory", "mnemosyne", "profile_isolation"))
    return own if value is not None and _truthy(value) else None


def _own_config(home: Path) -> Path:
    if chosen := inputs.environ("MNEMOSYNE_DATA_DIR"):
        return inputs.expanded(Path(chosen)) / "config.yaml"
    return home / "mnemosyne" / "config.yaml"


def bank_name(home: Path) -> str:
    """The bank Mnemosyne derives from Hermes' profile name for ``home``."""
    identity = hermes_profile_name(home)
    if identity != "default":
        bank = sanitize_bank_name(identity)
        if bank != "default":
            return bank
    # Mnemosyne falls back to the home's basename when Hermes says "default".
    base = home.name
    if base and base.lower() not in (".hermes", "hermes", "default"):
        return sanitize_bank_name(base)
    return "default"


def hermes_profile_name(home: Path) -> str:
    """Hermes' ``get_active_profile_name()`` for ``home`` (``hermes_cli/profiles.py``, 0.19).

    The root is ``~/.hermes`` for a home inside it; elsewhere (Docker's
    ``/opt/data``) a home is its own root, or ``<root>/profiles/<name>``. The
    root itself is ``default``, ``<root>/profiles/<name>`` is ``<name>``, and
    anything else is ``custom``.
    """
    here = inputs.expanded(home).resolve()
    root = _hermes_root(here)
    if here == root:
        return "default"
    if here.parent == root / "profiles" and _PROFILE_ID.fullmatch(here.name):
        return here.name
    return "custom"


def _hermes_root(here: Path) -> Path:
    native = (Path(inputs.home()) / ".hermes").resolve()
    if here.is_relative_to(native):
        return native
    return here.parent.parent if here.parent.name == "profiles" else here


def sanitize_bank_name(raw: str) -> str:
    """Mnemosyne's ``_sanitize_bank_name``: lower case, ``[a-z0-9_-]``, at most 64 characters."""
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in raw.lower().strip())
    while "__" in cleaned:
        cleaned = cleaned.replace("__", "_")
    cleaned = cleaned.strip("_-")
    if not cleaned:
        return "default"
    if not cleaned[0].isalnum():
        cleaned = "b_" + cleaned
    return cleaned[:_BANK_MAX].rstrip("_-") or "default"


def _truthy(value: Any) -> bool:
    return value.lower() in _TRUE if isinstance(value, str) else bool(value)


def _load(path: Path) -> Any:
    # Mnemosyne ignores a config it cannot read; so does this.
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    from ruamel.yaml import YAML  # only when there is a config to read: it costs ~9 ms of every CLI start
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="safe").load(text)
    except YAMLError:
        return None


def _lookup(document: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document
