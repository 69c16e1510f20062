"""GitHub Copilot: the repository's custom instructions, whole-repository or path-specific, and the Copilot CLI's
user-level ~/.copilot/copilot-instructions.md."""

from __future__ import annotations

from .model import Host, Limit, Preset

NAME = "copilot"
DISPLAY = "GitHub Copilot"
PATH_SPECIFIC = "copilot-path"

# Copilot code review reads only the first 4,000 characters of any custom instruction file
# (docs.github.com, "About customizing Copilot code review", 2025; later removed from the page, the limit
# may remain): 1000 tokens usually fits, the character limit makes sure.
REVIEW_LIMIT = Limit(4000, "chars", source="docs.github.com, About customizing Copilot code review (2025)")

HOST = Host(
    name=NAME, display=DISPLAY,
    presets={
        # With --user: the Copilot CLI's own instructions file (docs.github.com, "Adding custom instructions for
        # GitHub Copilot CLI": ~/.copilot/copilot-instructions.md, for every session of the user).
        # In a git checkout, .github/copilot-instructions.md is the team's: the path-specific file, excluded from
        # git, keeps the persona personal.
        NAME: Preset(DISPLAY, ".github/copilot-instructions.md", ".copilot/copilot-instructions.md", 1000,
                     limits=(REVIEW_LIMIT,), private=PATH_SPECIFIC),
        # Copilot's path-specific instructions (docs.github.com, "Adding repository custom instructions"): applyTo
        # "**" applies to every file; code review reads the first 4,000 characters of any instructions file.
        PATH_SPECIFIC: Preset(DISPLAY, ".github/instructions/persona.instructions.md", None, 1000, output="file",
                              limits=(REVIEW_LIMIT,), front_matter=(("applyTo", "**"),), host_name=NAME),
    },
)
