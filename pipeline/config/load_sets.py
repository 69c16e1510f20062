"""Everything a host loads in one project directory, in the host's order: its user-level and project-level
files, their fallbacks, rules folders and imports, read from the load model its module declares.

This is the file list alone; :mod:`pipeline.config.load_report` measures it (whose text each file holds, the
host's limits, what is cut, a fact arriving twice). A host without a load model loads its presets' files: the
user's file under the home and the project's files in the project directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .. import inputs
from ..fs.projects import git_top_level
from ..hosts import registry
from ..hosts.model import FirstFound, Host, MemoryFiles, PerDirectory, RulesFolders

# `@path` outside code, as Claude Code and Gemini CLI read it: `@` at a line's start or after whitespace (not an
# e-mail address, not our escaped `\@`), then a path starting with a letter, a digit, `.`, `_` or `/`; `@~/file`
# only where the model's home_imports says (seen in both real CLIs)
IMPORT = re.compile(r"(?<!\S)@((?:~/)?[\w./][\w.\-/]*)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
MAX_IMPORT_READ = 1 << 20  # an imported file is scanned for imports up to this many bytes


# the presets whose user file the host reads only while it exists, another of the user's files otherwise (OpenCode)
WAITING = tuple(p for p in registry.presets().values() if p.user_fallback and p.user_file)


@dataclass(frozen=True, slots=True)
class Loaded:
    """One file the host loads, and why: its part in the load set."""

    path: Path
    part: str  # "user file", "project file", "rules", "fallback (no CLAUDE.md here)", "imported by CLAUDE.md"...
    counted: bool = True  # counts toward the host's limits for the whole chain (Codex's global file does not)


@dataclass(frozen=True, slots=True)
class LoadSet:
    """What ``host`` loads working in ``project``; the user's files it leaves out beside them, and why."""

    host: Host
    project: Path
    files: tuple[Loaded, ...]
    skipped: tuple[tuple[Path, str], ...] = ()  # a file the host would read but for another one (AGENTS.md)

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(loaded.path for loaded in self.files)


def load_set(host: Host, project: Path, home: Path) -> LoadSet:
    """What ``host`` loads in ``project`` (a directory), as its load model says."""
    project = inputs.expanded(project).resolve()
    model = host.load
    if isinstance(model, MemoryFiles):
        return _memory_files(host, model, project, home)
    if isinstance(model, PerDirectory):
        return LoadSet(host, project, _per_directory(model, project, home))
    if isinstance(model, RulesFolders):
        return LoadSet(host, project, _rules_folders(model, project, home))
    if isinstance(model, FirstFound):
        return _first_found(host, model, project, home)
    return LoadSet(host, project, _preset_files(host, project, home))


def load_sets(host_name: str, projects: list[Path], home: Path) -> list[LoadSet]:
    """``host_name``'s load set in each of ``projects`` (an unknown host loads nothing we know)."""
    host = registry.HOSTS.get(host_name)
    return [] if host is None else [load_set(host, project, home) for project in projects]


def _memory_files(host: Host, model: MemoryFiles, project: Path, home: Path) -> LoadSet:
    """Claude Code's way (and Gemini CLI's): the user's files, then each directory's from the top down to the
    project's (its own files, else the fallback), the project's rules folder; each file followed by its imports.
    Claude Code skips a blank CLAUDE.md (empty, or HTML comments alone) and sends the fallbacks after the rules."""
    found: list[Loaded] = [Loaded(home / name, "user file") for name in model.user_files if (home / name).is_file()]
    if model.user_rules:
        found += [Loaded(path, "user rules") for path in _markdown(home / model.user_rules)]
    skipped: list[tuple[Path, str]] = []
    fallbacks: list[Loaded] = []
    for level in (*reversed(project.parents), project):
        own = own_files(model, level)
        where = "project file" if level == project else "parent directory's file"
        found += [Loaded(path, where) for path in own]
        fallback = next((level / name for name in model.fallback if (level / name).is_file()), None)
        if fallback is not None and not own:
            in_place = Loaded(fallback, f"{where}, in place of {spelled_names(model)}")
            (fallbacks if model.fallback_after_rules else found).append(in_place)
        elif fallback is not None:
            skipped.append((fallback, f"{own[0].name} is there: the host reads it instead"))
    if model.rules:
        found += [Loaded(path, "project rules") for path in _markdown(project / model.rules)]
    found += fallbacks
    files = _with_imports(_unique(found), model, home)
    loaded = {f.path for f in files}
    return LoadSet(host, project, files, tuple((path, why) for path, why in skipped if path.resolve() not in loaded))


def own_files(model: MemoryFiles, directory: Path) -> list[Path]:
    """The host's own files in ``directory`` that it loads (a blank one is absent to a host that says so)."""
    return [directory / name for name in model.names if (directory / name).is_file()
            and not (model.blank_is_absent and is_blank(directory / name))]


def is_blank(path: Path) -> bool:
    """Whether ``path`` holds nothing but whitespace and HTML comments (what Claude Code treats as no file)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_IMPORT_READ + 1)
    except OSError:
        return False
    if len(data) > MAX_IMPORT_READ:
        return False
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    return not HTML_COMMENT.sub("", text).strip()


def displaced_by_ours(host: Host, directory: Path) -> Path | None:
    """The user's fallback file in ``directory`` that a new file of the host's own names there would stop the host
    loading (Claude Code's AGENTS.md, where no CLAUDE.md is yet, or only a blank one); None when there is none."""
    model = host.load
    if isinstance(model, FirstFound) and model.up_tree:  # OpenCode: an AGENTS.md hides every CLAUDE.md up the tree
        chosen = first_found(model, directory)
        return None if chosen in (None, model.names[0]) else _found_up(model, directory, str(chosen))[0]
    if not isinstance(model, MemoryFiles) or own_files(model, directory):
        return None
    return next((directory / name for name in model.fallback if (directory / name).is_file()), None)


def spelled_names(model: MemoryFiles) -> str:
    return " or ".join(Path(name).name if "/" not in name else name for name in model.names)


def _markdown(folder: Path) -> list[Path]:
    try:
        return sorted(path for path in folder.rglob("*.md") if path.is_file()) if folder.is_dir() else []
    except OSError:  # a folder we may not read: the host cannot read it either
        return []


def _unique(found: list[Loaded]) -> list[Loaded]:
    """Each file once, where it first loads (the home's .claude/CLAUDE.md is a parent directory's too)."""
    seen: set[Path] = set()
    unique = []
    for loaded in found:
        resolved = loaded.path.resolve()
        if resolved not in seen:
            seen.add(resolved)
            unique.append(Loaded(resolved, loaded.part, loaded.counted))
    return unique


def _with_imports(files: list[Loaded], model: MemoryFiles, home: Path | None) -> tuple[Loaded, ...]:
    """``files``, each followed by what its ``@path`` lines import, up to the model's depth in hops, each file once;
    ``@~/path`` from the user's own files and what they import, where the host follows it there (``home``)."""
    seen = {loaded.path for loaded in files}
    out: list[Loaded] = []

    def visit(loaded: Loaded, hops: int, users: bool) -> None:
        out.append(loaded)
        if hops >= model.import_depth:
            return
        for path in imports_of(loaded.path, home if users else None):
            if path not in seen:
                seen.add(path)
                visit(Loaded(path, f"imported by {loaded.path.name}"), hops + 1, users)

    for loaded in files:
        visit(loaded, 0, model.home_imports and loaded.part.startswith("user"))
    return tuple(out)


def imports_of(path: Path, home: Path | None = None) -> list[Path]:
    """The existing files ``path``'s ``@path`` words name, outside code blocks and code spans, in order; with
    ``home``, ``@~/path`` too."""
    try:
        with path.open("rb") as handle:
            text = handle.read(MAX_IMPORT_READ).decode("utf-8", errors="replace")
    except OSError:
        return []
    found, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        for name in IMPORT.findall(CODE_SPAN.sub("", line)):
            if name.startswith("~/") and home is None:
                continue
            target = (home / name[2:]) if home is not None and name.startswith("~/") else path.parent / name
            if target.is_file():
                found.append(target.resolve())
    return found


def _per_directory(model: PerDirectory, project: Path, home: Path) -> tuple[Loaded, ...]:
    """Codex's way: the global file (outside project_doc_max_bytes), then one file per directory from the git root
    down to the project (the first non-empty of its names)."""
    override = inputs.environ(model.home_env) if model.home_env else None
    host_home = Path(override or home / model.home_dir).resolve()
    found = [Loaded(path, "global file", counted=False) for path in [first_non_empty(host_home, model.names)]
             if path is not None]
    top = git_top_level(project) or project
    levels = [level for level in (project, *project.parents) if level.is_relative_to(top)][::-1]
    for level in levels:
        path = first_non_empty(level, model.names)
        if path is not None:
            found.append(Loaded(path.resolve(), "project file" if level == project else "parent directory's file"))
    return tuple(found)


def first_non_empty(directory: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` in ``directory`` that is a non-empty file (Codex skips an empty one)."""
    for name in names:
        candidate = directory / name
        if candidate.is_file() and candidate.stat().st_size > 0:
            return candidate
    return None


def _rules_folders(model: RulesFolders, project: Path, home: Path) -> tuple[Loaded, ...]:
    """Windsurf's way: the global rules, then the rules folder of each directory from the git root down."""
    found = [Loaded((home / model.global_file).resolve(), "global rules")] if (home / model.global_file).is_file() \
        else []
    top = git_top_level(project) or project
    levels = [level for level in (project, *project.parents) if level.is_relative_to(top)][::-1]
    found += [Loaded(path.resolve(), "project rules") for level in levels
              for path in sorted((level / model.folder).glob(model.pattern)) if path.is_file()]
    return tuple(found)


def _first_found(host: Host, model: FirstFound, project: Path, home: Path) -> LoadSet:
    """OpenCode's way (and Zed's): the first user file that exists, then the project's files of the first name
    found (up the tree, nearest first, or in the project alone); what they hide is skipped, and said."""
    own = home / model.user_files[0]
    users = [home / name for name in model.user_files if (home / name).is_file()]
    found = [Loaded(path.resolve(), "user file" if path == own else f"user file, in place of {own}")
             for path in users[:1]]
    skipped = [(path, f"{users[0]} is there: the host reads it instead") for path in users[1:]]
    by_name = {name: _found_up(model, project, name) for name in model.names}
    chosen = next((name for name, paths in by_name.items() if paths), None)
    for name, paths in by_name.items():
        if name == chosen:
            found += [Loaded(path.resolve(), "project file" if path.parent == project else "parent directory's file")
                      for path in paths]
        else:
            skipped += [(path, f"the host reads {chosen} instead") for path in paths]
    return LoadSet(host, project, tuple(_unique(found)), tuple(skipped))


def first_found(model: FirstFound, project: Path) -> str | None:
    """Which of the model's project names the host loads in ``project`` (None: none is there)."""
    return next((name for name in model.names if _found_up(model, project, name)), None)


def _found_up(model: FirstFound, project: Path, name: str) -> list[Path]:
    """Every file ``name`` from ``project`` up to its git root (the filesystem's root outside a checkout), nearest
    first; or only the project's own, where the host reads just that one."""
    if not model.up_tree:
        return [project / name] if (project / name).is_file() else []
    top = git_top_level(project)
    levels = [level for level in (project, *project.parents) if top is None or level.is_relative_to(top)]
    return [level / name for level in levels if (level / name).is_file()]


def waiting_for(path: Path, home: Path) -> Path | None:
    """The user file a host reads while ``path``, a user-level file of one of its presets, is absent (OpenCode's
    ~/.claude/CLAUDE.md in place of ~/.config/opencode/AGENTS.md): the target waits rather than displace it."""
    for preset in WAITING:
        own = home / str(preset.user_file)
        if path.parts[-2:] == own.parts[-2:] and not path.exists() and path.resolve() == own.resolve():
            fallback = home / str(preset.user_fallback)
            return fallback if fallback.is_file() else None
    return None


def _preset_files(host: Host, project: Path, home: Path) -> tuple[Loaded, ...]:
    """A host without a load model: its presets' files that exist, the user's first."""
    user = [home / p.user_file for p in host.presets.values() if p.user_file is not None]
    mine = [project / p.project_file for p in host.presets.values()]
    found = [Loaded(path, "user file") for path in user if path.is_file()]
    found += [Loaded(path, "project file") for path in mine if path.is_file()]
    return tuple(_unique(found))
