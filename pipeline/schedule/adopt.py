"""`persona adopt PATH`: take over a target's file that persona-tier did not write, losing nothing in it.

A render never replaces a whole file it did not write (:mod:`pipeline.stages.ownership`): the user may have
written it by hand (the existing tier's documentation told its users to write ``~/.hermes/memory/persona.md``
themselves). Adopting it imports the file's facts into the store first, stamped ``adopt:PATH``, in one
transaction; then every target whose file it is renders over it, keeping a private copy of the old bytes beside
it (``NAME.before-persona-tier-STAMP``). From then on the file is a render of ours, and the facts it held live in
the store, where the user sees and changes them with everything else.

A region target's file (``CLAUDE.md``) is never overwritten: adopting it imports the list items outside our
region, and the render fills the region in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import inputs
from ..config.schema import Settings
from ..config.targets import ResolvedTarget, resolve_target
from ..errors import FactsFileError, InputError
from ..fs.write import same_file
from ..interchange.formats import import_source
from ..interchange.importing import ImportReport
from ..render.model import TargetReport
from ..scopes import project_scope
from ..stages.runner import run_pipeline
from ..store import FORGOTTEN, PersonaStore


@dataclass
class Adoption:
    """What adopting a file did (or, in a dry run, would do)."""

    path: Path
    format: str
    targets: list[str]
    imported: ImportReport
    rendered: list[TargetReport] = field(default_factory=list)
    copies: list[Path] = field(default_factory=list)  # the file's old bytes, kept beside it


def adopt(settings: Settings, store: PersonaStore, path: Path, *, fmt: str | None = None, topic: str | None = None,
          skip_bad: bool = False, dry_run: bool = False) -> Adoption:
    """Import ``path``'s facts (format ``fmt``, else the one its target's template writes), then render every target
    whose file it is over it. A ``dry_run`` only reports, on a store that may be read-only."""
    targets = targets_of(settings, store.profile, path)
    chosen = fmt or default_format(targets[0])
    origin = str(inputs.expanded(path).absolute())
    if not (dry_run or skip_bad):
        _refuse_forgotten(store, path, chosen, topic, origin, scope_of_file(targets[0]))
    imported = import_source(store, path, chosen, topic=topic, writer=f"adopt:{origin}", skip_bad=skip_bad,
                             dry_run=dry_run, scope=scope_of_file(targets[0]))
    adoption = Adoption(Path(origin), chosen, [target.name for target in targets], imported)
    if not dry_run:
        before = set(copies_of(adoption.path))
        adoption.rendered = run_pipeline(settings, store=store, targets=adoption.targets, overwrite=True)
        adoption.copies = sorted(set(copies_of(adoption.path)) - before)
    return adoption


def _refuse_forgotten(store: PersonaStore, path: Path, fmt: str, topic: str | None, origin: str,
                      scope: str | None) -> None:
    """A file that still holds forgotten text is not taken over, unlike a re-import (which skips the text): the
    copy of its old bytes kept beside it would hold that text again. Nothing is imported."""
    planned = import_source(store, path, fmt, topic=topic, dry_run=True, scope=scope)
    if planned.skipped_forgotten:
        raise FactsFileError("; ".join(f"{origin}: {where}: {FORGOTTEN}" for where in planned.skipped_forgotten)
                             + "; nothing was imported (--skip-bad imports the rest)")


def scope_of_file(target: ResolvedTarget) -> str | None:
    """The scope of the facts in a target's own file: a project's file holds that project's rules (adopting
    ``repo/CLAUDE.md`` must not make them true in every other repository); a user-level file, global ones."""
    projects = sorted(target.scopes.projects)
    return project_scope(projects[0]) if len(projects) == 1 else None


def targets_of(settings: Settings, profile: str, path: Path) -> list[ResolvedTarget]:
    """Every target of the profile whose file is ``path``, or one InputError saying how else to import it."""
    found = []
    for name, target in settings.targets.items():
        if target.output == "store":
            continue
        try:
            resolved = resolve_target(settings, name, profile=profile)
        except InputError:  # another profile's file
            continue
        if same_file(resolved.path, inputs.expanded(path)):
            found.append(resolved)
    if not found:
        raise InputError(f"{path} is no target's file (see `persona targets list`), so there is nothing to take "
                         f"over; to import its facts, use `persona import --from FORMAT {path}`")
    return found


def default_format(target: ResolvedTarget) -> str:
    """The format a target's own file is read in: a region's file and a Cursor rule are instruction files, a
    Markdown persona is a persona.md."""
    if target.output == "region" or target.template.endswith(".mdc.j2"):
        return "instructions"
    if target.template.endswith(".md.j2"):
        return "persona-md"
    raise InputError(f"target {target.name!r} renders {target.template}, which no importer reads back; name the "
                     "file's format with --from")


def copies_of(path: Path) -> list[Path]:
    """The copies of ``path``'s old bytes that renders kept beside it (:func:`~..stages.ownership.keep_copy`)."""
    return sorted(path.parent.glob(f"{_glob_escape(path.name)}.before-persona-tier-*"))


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)
