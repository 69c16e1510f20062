"""Windsurf: a workspace rules file of ours, and a region of the user's global rules."""

from __future__ import annotations

from .model import Host, Limit, Preset, RulesFolders

NAME = "windsurf"
DISPLAY = "Windsurf"
GLOBAL = ".codeium/windsurf/memories/global_rules.md"  # Windsurf's global rules, under the home
SOURCE = "docs.windsurf.com, Memories & Rules"

HOST = Host(
    name=NAME, display=DISPLAY,
    presets={
        # Windsurf (docs.windsurf.com, "Memories & Rules"): a rules file is cut at 6,000 characters, global and
        # workspace rules together at 12,000 (global first), silently. trigger: always_on puts it in every
        # request; the global rules are one file of the user's own, so ours is a region of it.
        NAME: Preset(DISPLAY, ".windsurf/rules/persona.md", GLOBAL, 1500, output="file", user_output="region",
                     front_matter=(("trigger", "always_on"),),
                     limits=(Limit(6000, "chars", source=SOURCE), Limit(12_000, "chars", "chain", source=SOURCE))),
    },
    # The global rules first, then the workspace's .windsurf/rules/*.md from the git root down; both limits
    # count characters over the global and workspace rules together.
    load=RulesFolders(global_file=GLOBAL, folder=".windsurf/rules"),
)
