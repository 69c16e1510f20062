"""What every host test installs (facts through our CLI, the user's own text by hand) and what it checks in
the request the host sent."""

from __future__ import annotations

from pathlib import Path

from .fake_model import Request
from .hosts import persona

FACTS = {
    "git": "Never force-push; ask first.",
    "style": "Answers tersely, in British English.",
    "tools": "Uses uv for Python packages — never pip.",
}
# A user's own instruction file: markdown, a code span, a non-ASCII character, no final blank line.
OWN_USER = "# My rules everywhere\n\nWrite `TODO(name)`, never a bare TODO.\nKeep lines short — always.\n"
OWN_PROJECT = "# This project\n\nRun `make check` before every commit.\nNever edit `vendor/`: it is generated.\n"


def add_facts(home: Path, facts: dict[str, str] = FACTS) -> None:
    for topic, fact in facts.items():
        persona(home, "add", fact, "--topic", topic)


def write_own(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def main_request(requests: list[Request]) -> Request:
    """The turn's own request: the last one to a model API (not Gemini CLI's model-routing call before it)."""
    turns = [request for request in requests if request.api != "other" and ":generateContent" not in request.path]
    assert turns, f"no request reached the model: {[request.path for request in requests]}"
    return turns[-1]


def assert_each_fact_once(request: Request, facts: dict[str, str] = FACTS) -> None:
    counts = {fact: request.text.count(fact) for fact in facts.values()}
    assert all(count == 1 for count in counts.values()), counts


def assert_intact(request: Request, *texts: str) -> None:
    """Each text arrives whole, byte for byte (a host may trim the whitespace around a file)."""
    for text in texts:
        assert text.strip() in request.text, f"not whole in the request: {text!r}"
