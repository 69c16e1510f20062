"""What a host is, as data: its scope name, its presets and their files, what it loads, its limits and hook.

Each host module under ``pipeline/hosts/`` declares one :class:`Host`; the registry lists them. Nothing here
reads a file: the readers (``config/host_loads.py`` for the load model, ``config/presets.py`` for the presets,
``integrations/claude_hooks.py`` for a hook) turn the data into behaviour. So this floor imports nothing of ours,
and every other floor may read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Unit = Literal["tokens", "chars", "bytes"]
# Text a host's loader interprets in a file it loads, rather than passing it on as written:
#   at-import     a word `@path` at a line's start or after whitespace splices that file in (Claude Code, Gemini CLI)
#   html-comment  `<!-- ... -->` standing as a block of its own is taken out (Claude Code)
#   jinja         `{{ }}`, `{% %}` and `{# #}` are a template's (Goose's .goosehints)
#   front-matter  `---` on a rules file's first line opens YAML the host reads as settings
#   heading       a line starting with `#` is a heading
Syntax = Literal["at-import", "html-comment", "jinja", "front-matter", "heading"]
LimitScope = Literal["file", "chain"]


@dataclass(frozen=True, slots=True)
class Limit:
    """One documented limit of a host, in its own unit; config turns it into a target's ``HostLimit``."""

    amount: int
    unit: Unit
    scope: LimitScope = "file"  # chain: every file the host loads with ours, together
    source: str = ""  # where the host documents it (or where it was measured)

    def as_dict(self) -> dict[str, Any]:
        """The limit as a target's settings hold it (``targets.NAME.limits``)."""
        return {"amount": self.amount, "unit": self.unit, "scope": self.scope}


@dataclass(frozen=True, slots=True)
class Preset:
    """The target one of a host's instruction files needs (``persona targets add NAME``)."""

    host: str  # the host's display name
    project_file: str  # relative to the project directory
    user_file: str | None  # under the home directory (None: the host has no per-user file)
    budget: int
    template: str = "persona.md.j2"
    output: str = "region"  # file: the whole file is ours (a rules file, Cursor's .mdc)
    limits: tuple[Limit, ...] = ()  # the host's documented limits, in its own unit
    region_at: str = "end"  # start: the host cuts from the end (Codex), so our region goes where it reads first
    front_matter: tuple[tuple[str, Any], ...] = ()  # a rules file's YAML front matter, as the host documents it
    user_output: str | None = None  # the user's file's output, when it differs (Windsurf's global_rules.md)
    host_name: str | None = None  # the host's scope name, when the preset's name is not it (copilot-path)
    # the preset `targets add` writes instead in a project whose directory holds the host's fallback file and
    # none of its own (Claude Code: AGENTS.md, no CLAUDE.md), so the host still loads the user's file whole
    beside_fallback: str | None = None
    # the preset `targets add` writes instead in a git checkout, unless --shared: a file of the host's that git
    # does not share (Claude Code's .claude/rules/, Copilot's .github/instructions/), listed in .git/info/exclude
    private: str | None = None
    # in the project, the first of these that exists is the file the host loads, and so the one written (a region
    # of it); where none does, ``project_file`` (Zed's `.rules`, else `.cursorrules`, ..., AGENTS.md...)
    first_of: tuple[str, ...] = ()
    # a user file the host loads in place of ``user_file`` while that is absent (OpenCode: ~/.claude/CLAUDE.md): the
    # render waits, so as not to displace it, until the user makes ``user_file`` (then the target takes over)
    user_fallback: str | None = None

    def target(self, name: str, path: Path, project: Path | None) -> dict[str, Any]:
        """The target's settings for preset ``name``, as written into the user's config: a project's file also
        names its project, so it shows that project's facts (and only the scopes its host does not load
        elsewhere: see ``targets.NAME.scopes``)."""
        output = self.user_output if project is None and self.user_output else self.output
        return {"output": output, "path": str(path), "template": self.template, "budget": self.budget,
                "host": self.host_name or name, **({"project": str(project)} if project is not None else {}),
                **({"limits": [lim.as_dict() for lim in self.limits]} if self.limits else {}),
                **({"region_at": self.region_at} if output == "region" and self.region_at != "end" else {}),
                **({"front_matter": dict(self.front_matter)} if output == "file" and self.front_matter else {})}


@dataclass(frozen=True, slots=True)
class PerDirectory:
    """A host that reads one file per directory, from the git root down (Codex's AGENTS.md chain), and a
    global one in its home folder, outside the chain's limit."""

    names: tuple[str, ...]  # per directory, the first non-empty one
    home_dir: str  # the host's folder under the home, holding the global file (same names)
    home_env: str | None = None  # an environment variable that moves that folder


@dataclass(frozen=True, slots=True)
class RulesFolders:
    """A host that reads a global rules file first, then every rules folder from the git root down to the
    workspace (Windsurf), all counted together."""

    global_file: str  # under the home
    folder: str  # in each directory, relative to it
    pattern: str = "*.md"


@dataclass(frozen=True, slots=True)
class MemoryFiles:
    """A host that loads its own file in the working directory and each parent, or where a directory has none
    of them a fallback (Claude Code: CLAUDE.md, else AGENTS.md), the rules folder of the working directory, the
    user's own files and rules under the home, and the files an ``@path`` line imports; all of it whole, with
    nothing counted together."""

    names: tuple[str, ...]  # per directory, every one that exists
    user_files: tuple[str, ...]  # under the home
    fallback: tuple[str, ...] = ()  # per directory, only where none of ``names`` exists
    rules: str | None = None  # a folder of the working directory whose every ``*.md`` loads
    user_rules: str | None = None  # the same folder under the home
    import_depth: int = 0  # hops of `@path` imports followed (0: the host imports nothing)
    drops_comments: bool = False  # the host takes HTML comments (our region markers) out of what it sends
    # a file of ``names`` holding nothing but blank lines and HTML comments counts as absent: the host loads the
    # fallback in its place (Claude Code 2.1.332, seen against a recording model: tests/hosts/test_claude_code.py)
    blank_is_absent: bool = False
    # `@~/path` imports from the user's own files (not from a project's, where an import outside the project waits
    # for the user's approval): Claude Code 2.1.332; Gemini CLI follows no `~` at all (its findImports)
    home_imports: bool = False
    # the fallback files are sent after the rules folder, not in their directory's place (Claude Code 2.1.332)
    fallback_after_rules: bool = False


@dataclass(frozen=True, slots=True)
class FirstFound:
    """A host that loads the first of its user files that exists (even empty), and of its project ``names`` the
    first it finds: OpenCode every file of that name from the working directory up to the git root, nearest first;
    Zed (``up_tree`` off) one file, the first of them in the project's root."""

    user_files: tuple[str, ...]  # under the home, in the host's order
    names: tuple[str, ...]
    up_tree: bool = True


LoadModel = PerDirectory | RulesFolders | MemoryFiles | FirstFound


@dataclass(frozen=True, slots=True)
class Hook:
    """A host's session-start hook: its settings file, the entry's shape, what it prints and its limits."""

    format: str  # `persona inject --format NAME` prints the hook's output
    settings_dir: str  # under the home (the user's) or the project (the project's)
    settings_name: str
    event: str
    matcher: str
    project_dir_env: str  # where the host tells its hook the project's directory
    limits: tuple[Limit, ...] = ()


@dataclass(frozen=True, slots=True)
class PromptSection:
    """A host that takes a plugin's own section of its system prompt, capped in the host's unit: the section's
    id, the frame the host puts before its text (``frame`` with ``{id}`` and ``{chars}``; not counted against
    ``limit``), and how much all plugins' sections share, frames included."""

    id: str
    frame: str
    limit: Limit
    total: int

    def framed(self, text: str) -> str:
        """``text`` as the host frames it."""
        return self.frame.format(id=self.id, chars=len(text)) + text


@dataclass(frozen=True, slots=True)
class HistoryFormat:
    """How a host writes a record of its history, read from the host's own code and seen in its files: which keys
    hold text (the user's, the assistant's, tools' output and arguments, summaries), and which are structure.

    A string under a ``text`` key is scrubbed (and everything under it, unless a ``structure`` key says otherwise);
    a string under a ``structure`` key (type, role, ids, uuids, cwd, paths, timestamps, model names) never changes,
    wherever it stands, and neither does a key. ``messages``: the text keys whose own string is a message's whole
    text, where a fact of one or two short words is replaced (anywhere else it is only reported).
    """

    text: frozenset[str]
    structure: frozenset[str]
    messages: frozenset[str]


@dataclass(frozen=True, slots=True)
class HistoryTable:
    """A table of a host's SQLite database that holds text: its text columns (plain text, or JSON in the host's
    record format), scrubbed in place; the other columns never change."""

    name: str
    text: tuple[str, ...] = ()
    json: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LineIndex:
    """Columns of a host's database that hold byte offsets into a history file (Codex pages a thread's rollout by
    them): a scrub that shortens the file moves each offset with it. The rows of a file are those whose
    ``key_column`` is the id (a UUID) its name ends with."""

    table: str
    offsets: tuple[str, ...]
    key_column: str


@dataclass(frozen=True, slots=True)
class HistoryDatabase:
    """A SQLite database a host keeps its history in too: the tables scrubbed in place with SQL, in one
    transaction, while no process holds it open; and the byte offsets into its history files it keeps."""

    file: str  # under the history folder
    tables: tuple[HistoryTable, ...]
    offsets: tuple[LineIndex, ...] = ()


@dataclass(frozen=True, slots=True)
class History:
    """Where a host keeps what its sessions said (a resumed session sends it again), and how: `persona forget`
    scrubs it.

    The folder is ``folder`` under the home; ``folder_env`` names a variable that is that folder instead (Codex's
    ``CODEX_HOME``), ``home_env`` one that is the home instead (Gemini CLI's ``GEMINI_CLI_HOME``).
    """

    folder: str
    files: tuple[str, ...]  # globs under the folder: JSON or JSON Lines files, rewritten with the text replaced
    format: HistoryFormat
    databases: tuple[HistoryDatabase, ...] = ()  # SQLite databases scrubbed in place
    stores: tuple[str, ...] = ()  # globs of files it also keeps them in (databases): never rewritten, only named
    store_reason: str = "a database of the host's own: persona-tier never rewrites it"  # why, and what to do
    folder_env: str | None = None
    home_env: str | None = None


@dataclass(frozen=True, slots=True)
class OwnMemory:
    """Where a host keeps its own memory (what its model writes when the user says "remember ..."), and how
    `persona learn` reads it: ``files`` (globs) under ``folder`` (under the home; ``folder_env`` names a variable
    that is that folder instead, ``home_env`` one that is the home instead), read by the import format ``format``;
    ``project`` says whose the facts are: None for the user's (global); ``slug`` for the project whose working
    directory the file's folder two levels up is named after (every character but a letter or digit as ``-``:
    Claude Code's ``~/.claude/projects/<slug>/memory``); ``index`` for the project whose root the JSON file
    ``index`` (under ``folder``) maps to that folder's name (Gemini CLI's ``projects.json``). With ``baseline``,
    the first learn of a file only notes what it holds (the user's own lines, imported by `persona init`), and
    later learns take what is new. A ``users_own`` file is one the user writes themselves (Claude Code's `#` appends
    their words to ~/.claude/CLAUDE.md): learned from, but never edited; a forget names it instead."""

    folder: str
    files: tuple[str, ...]
    format: str
    project: Literal["slug", "index"] | None = None
    folder_env: str | None = None
    home_env: str | None = None
    index: str | None = None  # project: index; {"projects": {root: name}}
    baseline: bool = False
    users_own: bool = False


@dataclass(frozen=True, slots=True)
class Host:
    """One agent persona-tier writes for or serves: everything the rest of the package knows about it."""

    name: str  # its scope name (``host:NAME``), and its main preset's
    display: str
    presets: dict[str, Preset] = field(default_factory=dict)  # preset name -> preset, the main one first
    rules_variant: str | None = None  # the preset `targets add NAME --rules` means
    load: LoadModel | None = None  # None: the host loads just the target's file
    hook: Hook | None = None
    offered_by_init: bool = False  # `persona init` adds its user-level preset when the host's folder exists
    user_override: str | None = None  # a user-level file the host loads instead of its usual one while it exists
    section: PromptSection | None = None  # a plugin prompt section the host renders (Hermes 0.22 and later)
    history: History | None = None  # None: the host keeps no transcript persona-tier knows of
    memory: tuple[OwnMemory, ...] = ()  # the host's own memory files, for `persona learn`
    # what its loader interprets in the files it loads: the render writes a fact so that none of it applies
    # (pipeline/hosts/escapes.py), and `targets check` reads the files the same way
    interprets: tuple[Syntax, ...] = ("heading",)
