"""What a host loads beside a target's file, in the host's own order, and whether our bytes are in it whole.

`persona targets check` asks this for every target. Each host's chain is computed from the load model its module
declares (``pipeline/hosts/``, as the host documents it: docs/hosts.md, with the sources); a host without a chain of
its own loads just the target's file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..fs.projects import git_top_level
from ..fs.read import read_file
from ..fs.region_file import MAX_REGION_FILE_BYTES
from ..fs.regions import MARKER_WORD, RegionId, own_region
from ..hosts import registry
from ..hosts.model import FirstFound, Host, PerDirectory, PromptSection, RulesFolders
from .load_sets import first_non_empty, load_set, waiting_for
from .targets import ResolvedTarget, region_id

if TYPE_CHECKING:  # `persona status` checks its targets without pydantic
    from .sections import HostLimit, LimitUnit

SHORTEN = "move the region or shorten the files"


@dataclass(frozen=True, slots=True)
class Chain:
    """The files a host loads with ours, in its order; which count towards its chain limits; what shadows ours."""

    files: tuple[Path, ...]  # counted against the host's chain limits, in the order the host reads them
    outside: tuple[Path, ...] = ()  # loaded too, outside the chain's limit (Codex's global file)
    shadowed_by: Path | None = None  # the host loads this file instead of ours


@dataclass(frozen=True, slots=True)
class Check:
    """One target's verdict: what the host loads, each limit's measure, and whether our bytes are in it whole."""

    target: str
    path: Path
    loaded: tuple[Path, ...]
    measures: tuple[str, ...]
    outcome: str
    cut: bool

    def as_dict(self) -> dict[str, object]:
        return {"target": self.target, "path": str(self.path), "loaded": [str(p) for p in self.loaded],
                "measures": list(self.measures), "outcome": self.outcome, "cut": self.cut}


def per_directory_chain(model: PerDirectory, path: Path, home: Path) -> Chain:
    """The chain of a host that reads one file per directory (Codex), for a file at ``path``: the global file
    (``$CODEX_HOME``, else ``~/.codex``: AGENTS.override.md, else AGENTS.md), then one file per directory from the
    git root down to ``path``'s (AGENTS.override.md, else AGENTS.md), empty files skipped. project_doc_max_bytes
    counts the project's files only (measured in the real Codex: tests/hosts/test_codex.py)."""
    override = inputs.environ(model.home_env) if model.home_env else None
    host_home = Path(override or home / model.home_dir).resolve()
    found = first_non_empty(host_home, model.names)
    path = path.resolve()
    directory = path.parent
    if directory == host_home:
        return Chain((), (path,), shadowed_by=_other(found, path))
    top = git_top_level(directory) or directory
    levels = [level for level in (directory, *directory.parents) if level.is_relative_to(top)][::-1]
    files = tuple(f for f in (first_non_empty(level, model.names) for level in levels) if f is not None)
    ours = first_non_empty(directory, model.names)
    return Chain(files if ours is not None else (*files, path), (found,) if found else (), _other(ours, path))


def _other(found: Path | None, path: Path) -> Path | None:
    return found if found is not None and found.resolve() != path.resolve() else None


def rules_folders_chain(model: RulesFolders, path: Path, home: Path) -> Chain:
    """A host's rules as it loads them (Windsurf): the global rules first, then the workspace's rules folder
    (``.windsurf/rules/*.md``) from the git root down to the workspace (the target's project; the working
    directory for the global file). Its limits count over the global and workspace rules together."""
    global_file = (home / model.global_file).resolve()
    path = path.resolve()
    depth = len(Path(model.folder).parts) + 1  # the file, in the folder, in the workspace
    workspace = Path.cwd().resolve() if path == global_file else path.parents[depth - 1]
    top = git_top_level(workspace) or workspace
    levels = [level for level in (workspace, *workspace.parents) if level.is_relative_to(top)][::-1]
    rules = [file.resolve() for level in levels for file in sorted((level / model.folder).glob(model.pattern))]
    return Chain(tuple(f for f in (global_file, *rules) if f.is_file()))


def first_found_chain(host: Host, model: FirstFound, path: Path, home: Path) -> Chain:
    """What a host that loads the first of several files (OpenCode, Zed) reads beside ``path``: for a project's
    file, what it loads working in that project; for the user's, in the working directory. Ours is shadowed where
    the host reads another of its files in its place (Zed: the user's `.rules` before our AGENTS.md)."""
    users = {(home / name).resolve() for name in model.user_files}
    name = next((name for name in model.names if path.as_posix().endswith("/" + name)), None)
    project = Path.cwd() if path in users or name is None else path.parents[len(Path(name).parts) - 1]
    loaded = load_set(host, project, home).paths
    if path in loaded:
        return Chain(loaded)
    rival = [other for other in loaded if (other in users) == (path in users)]
    return Chain(loaded, shadowed_by=rival[0] if rival else None)


def chain_of(host: str | None, path: Path, home: Path) -> Chain:
    """What ``host`` loads with ``path``, read from its load model (just the file, for a host without one)."""
    found = registry.HOSTS.get(host or "")
    model = None if found is None else found.load
    if isinstance(model, FirstFound) and found is not None:
        return first_found_chain(found, model, path.resolve(), home)
    if isinstance(model, PerDirectory):
        return per_directory_chain(model, path, home)
    if isinstance(model, RulesFolders):
        return rules_folders_chain(model, path, home)
    return Chain((path,))


def check_target(target: ResolvedTarget, host: str | None, home: Path,
                 max_bytes: int = MAX_REGION_FILE_BYTES) -> Check:
    """Whether the host of ``target`` loads our bytes whole (see :class:`Check`); a file past ``max_bytes``
    (``render.max_region_file_bytes``) is not read past it."""
    path = target.path.resolve()
    data = read_bounded(path, max_bytes)
    if data is not None and len(data) > max_bytes:
        return Check(target.name, path, (), (), f"larger than {max_bytes:,} bytes: persona-tier "
                     "neither reads nor writes it (render.max_region_file_bytes); shorten the file", cut=True)
    span = None if data is None else our_span(target, data)
    fallback = waiting_for(path, home) if data is None else None
    if fallback is not None:
        return _waiting(target.name, path, fallback)
    if data is None or span is None:
        return Check(target.name, path, (), (), "not written yet: run `persona render`", cut=False)
    chain = chain_of(host, path, home)
    loaded = (*chain.outside, *chain.files)
    if chain.shadowed_by is not None:
        return Check(target.name, path, loaded, (), f"not loaded: the host reads {chain.shadowed_by} "
                     "instead", cut=True)
    measures, cuts = [], []
    for limit in (limit for limit in target.limits if limit.unit != "tokens"):  # the cap keeps tokens
        files = chain.files if limit.scope == "chain" else (path,)
        if path not in files:
            measures.append(f"{_what(limit)}: this file does not count toward it")
            continue
        before = sum(size_in(read_bounded(f) or b"", limit.unit) for f in files[:files.index(path)])
        total = before + sum(size_in(read_bounded(f) or b"", limit.unit) for f in files[files.index(path):])
        measures.append(f"{total:,} of {_what(limit)}")
        start, stop = (before + size_in(data[:offset], limit.unit) for offset in span)
        if stop > limit.amount:
            cuts.append(f"cut after {max(0, limit.amount - start):,} {_unit(limit.unit)}: {SHORTEN}")
    return Check(target.name, path, loaded, tuple(measures), cuts[0] if cuts else "kept", cut=bool(cuts))


def _waiting(name: str, path: Path, fallback: Path) -> Check:
    """A target that waits while its host reads another file of the user's (OpenCode's ~/.claude/CLAUDE.md): kept
    where a region of ours there reaches the host, else a fail (the host gets none of the persona)."""
    ours = f"<!-- {MARKER_WORD}begin ".encode("ascii") in (read_bounded(fallback) or b"")
    then = "create this file and `persona render` writes it"
    if ours:
        return Check(name, path, (fallback,), (), f"waiting: the host reads {fallback} while this file is absent, "
                     f"and a region of ours there reaches it; {then}", cut=False)
    return Check(name, path, (fallback,), (), f"not loaded: the host reads {fallback} while this file is absent, "
                 f"and nothing of ours is there (a file of ours here would stop it reading yours); {then}, or add "
                 "a target writing that file", cut=True)


def check_text(name: str, where: Path, text: str, limits: Sequence[HostLimit]) -> Check:
    """A text a host reads whole or not at all (a hook's output) against the host's limits."""
    sizes = [(limit, size_in(text.encode("utf-8"), limit.unit)) for limit in limits if limit.unit != "tokens"]
    over = [f"over by {size - limit.amount:,} {_unit(limit.unit)}: shorten it" for limit, size in sizes
            if size > limit.amount]
    return Check(name, where, (), tuple(f"{size:,} of {_what(limit)}" for limit, size in sizes),
                 over[0] if over else "kept", cut=bool(over))


def check_section(name: str, where: Path, text: str, section: PromptSection,
                  crowd: tuple[int, int] | None = None) -> Check:
    """A host's plugin prompt section: our text against the section's limit (the host's frame not counted), and
    framed as the host frames it against what every plugin's sections share; with ``crowd`` (what the other
    plugins' sections took and the room they left ours, as the plugin last measured them), crowded when ours
    is cut to that room."""
    from .sections import HostLimit

    size, framed = len(text), len(section.framed(text))
    limit = section.limit
    measures = [f"{size:,} of {_what(HostLimit.model_validate(limit.as_dict()))}",
                f"{framed:,} of the {section.total:,} characters all plugins' sections share, with the host's heading"]
    outcome = f"over by {size - limit.amount:,} characters: shorten it" if size > limit.amount else "kept"
    if crowd is not None and crowd[0]:
        others, room = crowd
        measures.append(f"other plugins' sections take {others:,} of them, leaving ours {room:,}")
        if size > room and size <= limit.amount:
            outcome = (f"crowded: other plugins' sections leave ours {room:,} characters, so the plugin cuts it "
                       "at a section boundary (lower the budget, or remove a plugin)")
    return Check(name, where, (), tuple(measures), outcome, cut=outcome != "kept")


def our_span(target: ResolvedTarget, data: bytes) -> tuple[int, int] | None:
    """Where our bytes lie in the file: the region, markers included, or the whole file we own."""
    if target.output != "region":
        return 0, len(data)
    region: RegionId = region_id(target)
    span = own_region(data, region, str(target.path))
    return None if span is None else (span.start, span.stop)


def read_bounded(path: Path, max_bytes: int = MAX_REGION_FILE_BYTES) -> bytes | None:
    """The file's bytes, at most one past the region writer's bound: a file that long is past every host limit
    too, so no check needs the rest of it (and a huge file costs ``status`` no more than the bound)."""
    try:
        found = read_file(path, max_bytes, confine_symlinks=False)
    except OSError:
        return None
    return found.data + b"\0" if found.truncated else found.data


def size_in(data: bytes, unit: LimitUnit) -> int:
    if unit == "bytes":
        return len(data)
    return len(data.decode("utf-8", errors="replace"))


def _unit(unit: LimitUnit) -> str:
    return {"chars": "characters"}.get(unit, unit)


def _what(limit: HostLimit) -> str:
    return f"{limit.amount:,} {_unit(limit.unit)}" + (" for the whole chain" if limit.scope == "chain" else "")


def any_cut(checks: Sequence[Check]) -> bool:
    return any(check.cut for check in checks)
