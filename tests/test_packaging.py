"""What a user installs: the wheel carries the package, its type marker and the shipped templates, and installed
outside the checkout (as pip, pipx or uv tool install it) it works without it."""

from __future__ import annotations

import ast
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from .conftest import REPO


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's wheel, built once per test process (a build takes seconds)."""
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(REPO)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    [made] = out.glob("persona_tier-*.whl")
    return made


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment outside the checkout with the wheel installed; its dependencies are this
    environment's (offline), put on its path by a .pth file, which does not carry the checkout's editable hook."""
    venv = tmp_path_factory.mktemp("outside") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    (Path(purelib) / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                           "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return venv


def test_the_wheel_ships_the_types_and_the_templates(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pipeline/py.typed" in names  # PEP 561: type checkers read the package's own annotations
    assert {"pipeline/_templates/persona.md.j2", "pipeline/__init__.py", "pipeline/cli/__init__.py"} <= names
    assert not any(name.startswith(("tests/", "benchmarks/")) for name in names)


def test_installed_from_the_wheel_the_hermes_plugin_finds_it_and_names_each_path_once(installed: Path,
                                                                                       tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"PATH": f"{installed / 'bin'}:/usr/bin:/bin", "HOME": str(home)}
    version = subprocess.run(["persona", "--version"], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("persona-tier "), version.stderr
    done = subprocess.run(["persona", "hermes", "install", "--hermes-home", str(tmp_path / "hermes")], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    init = (tmp_path / "hermes" / "plugins" / "persona" / "__init__.py").read_text(encoding="utf-8")
    [loop] = [node for node in ast.walk(ast.parse(init)) if isinstance(node, ast.For)]
    paths = ast.literal_eval(loop.iter)
    assert len(paths) == len(set(paths)) == 1, paths  # the wheel's package sits in its site-packages
    assert (Path(paths[0]) / "pipeline" / "__init__.py").is_file() and str(REPO) not in paths[0]
