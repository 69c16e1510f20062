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
# Scoped facts (docs/store.md#scopes): one for the host under test, one for the test's project, and two that
# must never arrive there: another project's and another agent's.
HOST_FACT = "Keeps each reply under twenty lines in this agent."
PROJECT_FACT = "Ships this project's releases on Thursdays only."
ELSEWHERE = ("Deploys the other checkout with Fly.io.", "Indents with tabs in the other agent.")
# A user's own instruction file: markdown, a code span, a non-ASCII character, no final blank line.
OWN_USER = "# My rules everywhere\n\nWrite `TODO(name)`, never a bare TODO.\nKeep lines short — always.\n"
OWN_PROJECT = "# This project\n\nRun `make check` before every commit.\nNever edit `vendor/`: it is generated.\n"


def add_facts(home: Path, facts: dict[str, str] = FACTS) -> None:
    for topic, fact in facts.items():
        persona(home, "add", fact, "--topic", topic)


def add_scoped_facts(home: Path, host: str, project: Path, other_project: Path) -> None:
    """The host's fact, the project's, and the two that belong elsewhere (another project, another host)."""
    other_project.mkdir(exist_ok=True)
    persona(home, "add", HOST_FACT, "--topic", "length", "--host", host)
    persona(home, "add", PROJECT_FACT, "--topic", "release", "--project", str(project))
    persona(home, "add", ELSEWHERE[0], "--topic", "deploy", "--project", str(other_project))
    persona(home, "add", ELSEWHERE[1], "--topic", "indent", "--host", "cursor" if host != "cursor" else "codex")


def user_and_project_regions(home: Path, host: str, project: Path, elsewhere: Path) -> None:
    """Both presets of ``host`` at once, every kind of fact, rendered: the user-level file carries the global
    facts and the host's, the project's file only the project's (docs/targets.md#which-facts-a-target-shows)."""
    persona(home, "targets", "add", host, "--user", "--name", f"{host}-user")
    persona(home, "targets", "add", host, "--project", str(project))
    add_facts(home)
    add_scoped_facts(home, host, project, elsewhere)
    persona(home, "render")


def assert_scoped_facts(request: Request, *, project: bool) -> None:
    """Every global fact and the host's once, the project's once when the host gets it, nothing from
    elsewhere: exactly this user's facts for this agent in this project."""
    expected = dict.fromkeys([*FACTS.values(), HOST_FACT], 1) | {PROJECT_FACT: int(project)}
    expected |= dict.fromkeys(ELSEWHERE, 0)
    assert {fact: request.text.count(fact) for fact in expected} == expected


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
