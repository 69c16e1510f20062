"""What a user installs: the wheel carries the package, its type marker and the shipped templates."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from .conftest import REPO


def test_the_wheel_ships_the_types_and_the_templates(tmp_path: Path) -> None:
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path), str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    [wheel] = tmp_path.glob("persona_tier-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pipeline/py.typed" in names  # PEP 561: type checkers read the package's own annotations
    assert {"pipeline/_templates/persona.md.j2", "pipeline/__init__.py", "pipeline/cli/__init__.py"} <= names
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)
