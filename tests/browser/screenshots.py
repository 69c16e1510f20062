"""Photograph each page of `persona ui` for docs/ui.md: `make ui-screenshots` (python -m tests.browser.screenshots DIR).

The same seeded profile the browser tests drive, served by a real `persona ui`, shot by the system's Chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from ..ui.running import config_file, start
from .conftest import CHROMIUM
from .profile import seed_profile

PAGES = {"facts": "/", "agents": "/agents", "proposals": "/proposals", "forget": None, "history": None}


def shoot(out: Path) -> list[Path]:
    """Every page as a PNG in ``out``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        running = start(tmp, config_file(tmp, seed_profile(tmp)))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
                page = browser.new_page(viewport={"width": 1200, "height": 820})
                page.goto(running.url)
                written = [_shot(page, f"http://{running.authority}", name, out) for name in PAGES]
                browser.close()
        finally:
            running.stop()
    return written


def _shot(page: Page, origin: str, name: str, out: Path) -> Path:
    path = PAGES[name]
    page.goto(origin + (path or "/"))
    if path is None:  # reached from a fact's row, as a user reaches it
        row = page.locator("tr", has_text="four spaces" if name == "history" else "Uses uv")
        row.get_by_role("link", name="History" if name == "history" else "Forget…").click()
    if name == "facts":
        page.locator("tr", has_text="Uses uv").get_by_text("Edit").click()
    shot = out / f"ui-{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    return shot


if __name__ == "__main__":
    for written in shoot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")):
        print(f"wrote {written}")
