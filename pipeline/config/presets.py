"""Host presets: the target each coding agent's own instruction file needs (`persona targets add HOST`).

Each budget follows the host's documented limit where it has one; docs/hosts.md says why each is
what it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Preset:
    host: str
    project_file: str  # relative to the project directory
    user_file: str | None  # under the home directory (None: the host has no per-user file)
    budget: int
    template: str = "persona.md.j2"
    output: str = "region"  # file: the whole file is ours (Cursor's .mdc)

    def target(self, name: str, path: Path, project: Path | None) -> dict[str, Any]:
        """The target's settings for preset ``name``, as written into the user's config: a project's file also
        names its project, so it shows that project's facts (and only the scopes its host does not load
        elsewhere: see ``targets.NAME.scopes``)."""
        return {"output": self.output, "path": str(path), "template": self.template, "budget": self.budget,
                "host": name, **({"project": str(project)} if project is not None else {})}


PRESETS = {
    # Claude Code loads CLAUDE.md whole into every session and names no hard limit; it warns about large
    # memory files, so the persona stays a small share of it.
    "claude-code": Preset("Claude Code", "CLAUDE.md", ".claude/CLAUDE.md", 2000),
    # Codex stops reading its AGENTS.md chain at project_doc_max_bytes (32 KiB): 2000 tokens (about 8 KiB)
    # leaves three quarters of that for the user's own files.
    "codex": Preset("Codex", "AGENTS.md", ".codex/AGENTS.md", 2000),
    # Gemini CLI documents no limit for GEMINI.md.
    "gemini": Preset("Gemini CLI", "GEMINI.md", ".gemini/GEMINI.md", 2000),
    # Copilot code review reads only the first 4,000 characters of the instructions file; 1000 tokens fits.
    "copilot": Preset("GitHub Copilot", ".github/copilot-instructions.md", None, 1000),
    # Cursor advises rules under 500 lines; the .mdc file is ours alone, front matter included.
    "cursor": Preset("Cursor", ".cursor/rules/persona.mdc", None, 1500, template="persona.mdc.j2", output="file"),
}


def preset_path(name: str, *, project: Path | None, user: bool, home: Path) -> Path:
    """Where preset ``name`` writes: the user's own file (``user``) or the project's; ValueError if it has none."""
    preset = PRESETS[name]
    if user:
        if preset.user_file is None:
            raise ValueError(f"{preset.host} has no per-user instruction file; use --project DIR")
        return home / preset.user_file
    return project_dir(project) / preset.project_file


def project_dir(project: Path | None) -> Path:
    """The project directory a preset's project file goes in (default: the working directory)."""
    return (project or Path.cwd()).resolve()
