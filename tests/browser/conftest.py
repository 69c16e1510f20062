"""The browser end-to-end tests: the system's Chromium (Debian's /usr/bin/chromium), driven by Playwright for Python.

`make test-ui` installs both (the Playwright wheel from PyPI, Chromium with apt-get when it is missing); nothing
downloads a browser build of its own. `make test` does not run these, so a checkout without Chromium still passes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from ..ui.running import Running, config_file, start
from .profile import SETTLE_MS, seed_profile

CHROMIUM = "/usr/bin/chromium"
expect.set_options(timeout=SETTLE_MS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def overrides(tmp_path: Path) -> dict[str, object]:
    return seed_profile(tmp_path)


@pytest.fixture
def ui(tmp_path: Path, overrides: dict[str, object]) -> Iterator[Running]:
    running = start(tmp_path, config_file(tmp_path, overrides))
    yield running
    assert running.stop() == 0


@pytest.fixture
def page(browser: Browser, ui: Running) -> Iterator[Page]:
    """A fresh browser profile that opened the address `persona ui` printed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(SETTLE_MS)
    opened.goto(ui.url)
    yield opened
    context.close()
