"""Default locations, resolved from the environment each time they are asked for."""

from __future__ import annotations

import os
from pathlib import Path


def hermes_home() -> Path:
    """``$HERMES_HOME``, else ``~/.hermes``."""
    return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


def default_config_path() -> Path:
    """The YAML file read when no other is named."""
    return hermes_home() / "mnemosyne" / "persona.yaml"


def default_db_path() -> Path:
    """Mnemosyne's own database path."""
    if data_dir := os.environ.get("MNEMOSYNE_DATA_DIR"):
        return Path(data_dir) / "mnemosyne.db"
    return hermes_home() / "mnemosyne" / "data" / "mnemosyne.db"
