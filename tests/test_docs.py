"""The docs stay true: the generated references are what the code gives now."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import docs_reference
from .conftest import REPO

DOCS = REPO / "docs"
REFERENCE = DOCS / "reference"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# -- generated references -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(docs_reference.PAGES))
def test_the_generated_reference_is_what_the_code_gives_now(name):
    committed = text(REFERENCE / name)
    assert committed == docs_reference.PAGES[name](), f"docs/reference/{name} is stale: run make reference"
