"""Host presets: the target each coding agent's own instruction file needs (`persona targets add HOST`).

Each budget follows the host's documented limit where it has one; docs/hosts.md says why each is
what it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sections import HostLimit, LimitUnit


def limit(amount: int, unit: LimitUnit, scope: str = "file") -> HostLimit:
    return HostLimit.model_validate({"amount": amount, "unit": unit, "scope": scope})


@dataclass(frozen=True, slots=True)
class Preset:
    host: str
    project_file: str  # relative to the project directory
    user_file: str | None  # under the home directory (None: the host has no per-user file)
    budget: int
    template: str = "persona.md.j2"
    output: str = "region"  # file: the whole file is ours (a rules file, Cursor's .mdc)
    limits: tuple[HostLimit, ...] = ()  # the host's documented limits, in its own unit
    region_at: str = "end"  # start: the host cuts from the end (Codex), so our region goes where it reads first
    front_matter: tuple[tuple[str, Any], ...] = ()  # a rules file's YAML front matter, as the host documents it
    user_output: str | None = None  # the user's file's output, when it differs (Windsurf's global_rules.md)
    host_name: str | None = None  # the host's name in scopes, when the preset's name is not it (copilot-path)

    def target(self, name: str, path: Path, project: Path | None) -> dict[str, Any]:
        """The target's settings for preset ``name``, as written into the user's config: a project's file also
        names its project, so it shows that project's facts (and only the scopes its host does not load
        elsewhere: see ``targets.NAME.scopes``)."""
        output = self.user_output if project is None and self.user_output else self.output
        return {"output": output, "path": str(path), "template": self.template, "budget": self.budget,
                "host": self.host_name or name, **({"project": str(project)} if project is not None else {}),
                **({"limits": [lim.model_dump() for lim in self.limits]} if self.limits else {}),
                **({"region_at": self.region_at} if output == "region" and self.region_at != "end" else {}),
                **({"front_matter": dict(self.front_matter)} if output == "file" and self.front_matter else {})}


CODEX_CHAIN_BYTES = 32 * 1024  # Codex's default project_doc_max_bytes
WINDSURF_GLOBAL = ".codeium/windsurf/memories/global_rules.md"  # Windsurf's global rules, under the home

PRESETS = {
    # Claude Code loads CLAUDE.md whole into every session and names no hard limit; it warns about large
    # memory files, so the persona stays a small share of it.
    "claude-code": Preset("Claude Code", "CLAUDE.md", ".claude/CLAUDE.md", 2000),
    # Codex stops reading its AGENTS.md chain at project_doc_max_bytes (32 KiB), silently
    # (developers.openai.com/codex/guides/agents-md, "project_doc_max_bytes"): 2000 tokens (about 8 KiB)
    # leaves three quarters of that for the user's own files. What is past the limit is dropped, so the region
    # goes at the start of the file.
    "codex": Preset("Codex", "AGENTS.md", ".codex/AGENTS.md", 2000,
                    limits=(limit(CODEX_CHAIN_BYTES, "bytes", "chain"),), region_at="start"),
    # Gemini CLI documents no limit for GEMINI.md.
    "gemini": Preset("Gemini CLI", "GEMINI.md", ".gemini/GEMINI.md", 2000),
    # Copilot code review reads only the first 4,000 characters of any custom instruction file
    # (docs.github.com, "About customizing Copilot code review", 2025; later removed from the page, the limit
    # may remain): 1000 tokens usually fits, the character limit makes sure.
    "copilot": Preset("GitHub Copilot", ".github/copilot-instructions.md", None, 1000,
                      limits=(limit(4000, "chars"),)),
    # Cursor advises rules under 500 lines; the .mdc file is ours alone, front matter included.
    "cursor": Preset("Cursor", ".cursor/rules/persona.mdc", None, 1500, template="persona.mdc.j2", output="file"),
    # Claude Code's own rules folder (code.claude.com/docs/en/memory, "rules"): a rule without `paths:` front
    # matter loads in every session, and the file is ours alone, so CLAUDE.md stays the user's.
    "claude-code-rules": Preset("Claude Code", ".claude/rules/persona.md", ".claude/rules/persona.md", 2000,
                                output="file", host_name="claude-code"),
    # Copilot's path-specific instructions (docs.github.com, "Adding repository custom instructions"): applyTo
    # "**" applies to every file; code review reads the first 4,000 characters of any instructions file.
    "copilot-path": Preset("GitHub Copilot", ".github/instructions/persona.instructions.md", None, 1000,
                           output="file", limits=(limit(4000, "chars"),), front_matter=(("applyTo", "**"),),
                           host_name="copilot"),
    # Windsurf (docs.windsurf.com, "Memories & Rules"): a rules file is cut at 6,000 characters, global and
    # workspace rules together at 12,000 (global first), silently. trigger: always_on puts it in every request;
    # the global rules are one file of the user's own, so ours is a region of it.
    "windsurf": Preset("Windsurf", ".windsurf/rules/persona.md", WINDSURF_GLOBAL, 1500, output="file",
                       user_output="region", front_matter=(("trigger", "always_on"),),
                       limits=(limit(6000, "chars"), limit(12_000, "chars", "chain"))),
    # Cline (docs.cline.bot, "Cline Rules"): every .md file in .clinerules/, and the global rules folder;
    # no limit stated.
    "cline": Preset("Cline", ".clinerules/persona.md", "Documents/Cline/Rules/persona.md", 2000, output="file"),
    # Continue (docs.continue.dev, "Rules"): name is required; alwaysApply: true includes it in every request.
    "continue": Preset("Continue", ".continue/rules/persona.md", ".continue/rules/persona.md", 2000, output="file",
                       front_matter=(("name", "persona-tier"), ("alwaysApply", True),
                                     ("description", "The user's standing preferences, kept by persona-tier"))),
    # Kiro (kiro.dev/docs/steering): inclusion: always loads the steering file in every interaction.
    "kiro": Preset("Kiro", ".kiro/steering/persona.md", ".kiro/steering/persona.md", 2000, output="file",
                   front_matter=(("inclusion", "always"),)),
}


# Claude Code saves a hook's output over 10,000 characters to a file and shows the model a 2 KB preview
# (code.claude.com/docs/en/hooks, "Hook output"; anthropics/claude-code#94358): additionalContext stays under it.
HOOK_LIMITS = {"claude-code": (limit(10_000, "chars"),)}


RULES_VARIANTS = {"claude-code": "claude-code-rules"}  # `targets add claude-code --rules`


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
