"""`make path` puts `persona` on PATH: a link in ~/.local/bin to the checkout's venv (temporary HOME only)."""

from __future__ import annotations

import os
import subprocess

from .conftest import REPO


def make_path(home, path):
    # -o: the venv stamp counts as up to date, so the test never reinstalls the checkout's venv.
    env = {"HOME": str(home), "PATH": path}
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "path"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=True)


def test_make_path_links_persona_into_local_bin(tmp_path):
    home = tmp_path / "someone"
    home.mkdir()
    done = make_path(home, os.environ["PATH"])
    link = home / ".local" / "bin" / "persona"
    assert link.is_symlink() and link.resolve() == (REPO / ".venv" / "bin" / "persona").resolve()
    assert f"{home / '.local' / 'bin'} is not on PATH" in done.stdout
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=60,
                             env={"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert version.returncode == 0 and version.stdout.strip()
    again = make_path(home, f"{home / '.local' / 'bin'}:{os.environ['PATH']}")
    assert "not on PATH" not in again.stdout and link.resolve() == (REPO / ".venv" / "bin" / "persona").resolve()
    assert sorted(p.name for p in home.rglob("*")) == [".local", "bin", "persona"]
