"""A small profile to drive the page with (and to photograph for docs/ui.md): a few topics, a host's own fact, a
proposal, a replaced fact with its history, and a Codex target whose budget leaves a fact out."""

from __future__ import annotations

from pathlib import Path

from pipeline import PersonaStore, load_settings
from pipeline.config.presets import PRESETS

SETTLE_MS = 20_000  # the longest a page may take to show an outcome on a loaded machine; a bound, not a measure
NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"
FACTS = [
    ("Answers tersely; no preamble.", "style", "permanent", None),
    ("Writes commit messages in the imperative mood.", "git", "long_term", None),
    ("Never force-push; ask first.", "git", "permanent", None),
    ("Uses uv, never pip.", "tools", "long_term", None),
    ("Runs the test suite before every commit.", "workflow", "long_term", None),
    ("Prefers small pull requests with one idea each.", "workflow", "long_term", "host:codex"),
]


def preset_target(host: str, project: Path) -> dict[str, object]:
    return PRESETS[host].target(host, project / PRESETS[host].project_file, project)


def seed_profile(tmp_path: Path) -> dict[str, object]:
    """Write the profile into a database in ``tmp_path``; return the settings (dotted) the server should read."""
    overrides: dict[str, object] = {
        "store.path": str(tmp_path / "mnemosyne.db"),
        "injection.file": str(tmp_path / "persona.md"),
        # As `persona targets add` writes them (each host's limits included); Codex's budget made small enough
        # to leave facts out.
        "targets.codex": {**preset_target("codex", tmp_path), "budget": 45},
        "targets.copilot": preset_target("copilot", tmp_path),
    }
    settings = load_settings(overrides=overrides)
    with PersonaStore.from_settings(settings, writer="cli") as store:
        for content, topic, tier, scope in FACTS:
            store.add(content, topic=topic, tier=tier, scope=scope)
        old = store.add("Indents with two spaces.", topic="style").fact
        store.replace(old.id, "Indents with four spaces in Python.", reason="corrected in review")
        store.add(NPM, topic="tools")
        store.add(PNPM, topic="tools")  # may update the npm fact: one open proposal
    return overrides
