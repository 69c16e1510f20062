"""Targets as the pipeline and the injector use them: every fallback applied, for one profile, and the files
no render may write."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .. import inputs
from ..errors import AnotherProfilesFile, ConfigError, FileSystemError, InputError, StageError
from ..fs.locations import default_persona_file, hermes_home, profile_slug
from ..fs.projects import identity_of
from ..fs.regions import RegionId
from ..fs.write import FileIdentity, refuse_protected, same_file
from ..fs.yaml import front_matter
from ..hosts import registry
from ..hosts.model import Syntax
from ..scopes import GLOBAL_ONLY, ScopeFilter, ScopeKind
from .presets import PRESETS
from .urls import SERVER_SCHEMES, db_path

if TYPE_CHECKING:
    from .schema import Settings
    from .sections import HostLimit, TargetSettings

MAX_TARGET_NAME = 100  # characters of a target's name (the settings check it; the stored blocks too)


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """A target as the pipeline and injector use it: every fallback applied."""

    name: str
    template: str
    path: Path
    budget: int
    boundary: str
    note: str | None  # configured; None means the template's own (render.notes.truncation_note)
    template_dirs: tuple[str, ...] = ()
    output: Literal["file", "store", "region"] = "file"  # store: to persona_blocks; region: our part of a file
    profile: str = "default"
    region: str | None = None  # region: the name in its markers, beside the profile
    region_at: Literal["end", "start"] = "end"  # region: where a file without one gets it
    scopes: ScopeFilter = GLOBAL_ONLY  # which facts it shows
    limits: tuple[HostLimit, ...] = ()  # the host's own limits besides the budget (chars, bytes, a chain's)
    front_matter: str = ""  # output: file: the YAML front matter written before the rendered text
    interprets: tuple[Syntax, ...] = ()  # what its host's loader interprets: the render escapes facts for it

    @property
    def in_store(self) -> bool:
        return self.output == "store"


def scope_filter(settings: Settings, target: TargetSettings) -> ScopeFilter:
    """Which facts ``target`` shows: its ``scopes``, else what its host loads beside it (see the setting)."""
    kinds = target.scopes or _default_kinds(settings, target)
    hosts = frozenset({target.host}) if "host" in kinds and target.host else frozenset()
    project = target.project
    projects: frozenset[str] = frozenset()
    if "project" in kinds and project:  # read from the checkout once per settings: its remote may change
        projects = frozenset({settings.derived(f"project {project}", lambda _: project_identity(project))})
    # the host loads its own memory beside this file: what was learned from it is not written here again
    return ScopeFilter("global" in kinds, hosts, projects, target.host if registry.keeps_memory(target.host) else None)


def _default_kinds(settings: Settings, target: TargetSettings) -> list[ScopeKind]:
    if target.project is None:
        return ["global", "host"] if target.host else ["global"]
    if _user_level_target(settings, target.host):  # the host loads that file beside this one: no fact twice
        return ["project"]
    return ["global", "host", "project"]


def _user_level_target(settings: Settings, host: str | None) -> bool:
    """Whether this profile also writes ``host``'s user-level file (a target of that host with no project)."""
    preset = PRESETS.get(host or "")
    if preset is None or preset.user_file is None:
        return False
    return any(other.host == host and other.project is None for other in settings.targets.values())


def project_identity(text: str) -> str:
    """A target's ``project``: an absolute directory (its project's identity) or an identity already
    (github.com/x/y); a relative path is a ConfigError, since it would name another project from elsewhere."""
    try:
        return identity_of(text, relative=False)
    except ValueError as error:
        raise ConfigError([str(error)]) from None


def region_id(target: ResolvedTarget) -> RegionId:
    """The markers of ``target``'s region: its profile (as a file-name-safe slug) and its region name."""
    return RegionId(profile_slug(target.profile), target.region)


def protected_paths(settings: Settings, *, besides: str | None = None, profile: str | None = None,
                    config_files: bool = True) -> dict[Path, str]:
    """Files a render must never write, each with what it is: the store, its journals, the config files
    these settings came from (unless ``config_files`` is off), and every target's file but ``besides``'s."""
    db = db_path(settings)
    protected = {db: f"the database {db}"}
    protected |= {Path(f"{db}{end}"): f"the database's {end} file" for end in ("-wal", "-shm", "-journal")}
    if config_files:
        protected |= {path: f"the config file {path}" for path in settings.config_files}
    sharing = besides is not None and settings.targets[besides].output == "region"
    for name, target in settings.targets.items():
        # Region targets share a file with each other (their markers differ; the schema checks that), never with
        # a target that owns the whole file.
        if name != besides and target.output != "store" and not (sharing and target.output == "region"):
            expands = "{profile}" in raw_path(settings, name)
            protected[resolve_target(settings, name, profile=profile if expands else None).path] = (
                f"target {name!r}'s file")
    return protected


def check_writable(settings: Settings, target: ResolvedTarget, *, profile: str | None = None) -> bool:
    """Raise unless ``target``'s file may be written: a regular file (or none yet, FileSystemError), and none of
    :func:`protected_paths` (InputError). Checked before anything is rendered, so a bad path changes nothing.
    Whether anything has the file's name (a file, a symlink): False for a store target and for a file not there."""
    if target.in_store:
        return False
    mine = FileIdentity(target.path)  # one look at the file answers both questions
    kind = mine.kind()
    if kind is not None:
        raise FileSystemError(f"cannot write persona file {target.path}: it is {kind}")
    refuse_protected(target.path, _kept_protected(settings, target.name, profile),
                     what=f"target {target.name!r}'s persona", mine=mine)
    return not mine.unnamed


def _kept_protected(settings: Settings, besides: str, profile: str | None) -> dict[Path, str]:
    """:func:`protected_paths` (which files they are, not whether they exist: that is asked every time), made once
    for these settings, the profile and the home they read; every time where the database is the default one,
    which Mnemosyne's bank files choose."""
    url = settings.store.url
    if settings.store.path is None and not (url and not url.startswith(SERVER_SCHEMES)):
        return protected_paths(settings, besides=besides, profile=profile)
    kept: dict[tuple[object, ...], dict[Path, str]] = settings.derived("protected paths", _none_protected)
    key = (besides, profile, inputs.environ("HOME"),
           hermes_home() if any(_defaulted(settings, name) for name in settings.targets) else None)
    protected = kept.get(key)
    if protected is None:
        protected = protected_paths(settings, besides=besides, profile=profile)
        if len(kept) >= KEPT_TARGETS:
            kept.clear()
        kept[key] = protected
    return protected


def _none_protected(_: Settings) -> dict[tuple[object, ...], dict[Path, str]]:
    return {}


def raw_path(settings: Settings, name: str) -> str:
    return str(settings.targets[name].path or settings.injection.file or default_persona_file())


@dataclass(frozen=True, slots=True)
class OwnersOnly:
    """A target whose one file belongs to store.profile, met while rendering for another profile: that profile's
    renders go on without it, and say so with what to set."""

    name: str
    path: str  # as configured, before any {profile}
    key: str  # the setting that names it
    owner: str
    profile: str

    def warning(self) -> str:
        return (f"target {self.name!r} was not rendered for profile {self.profile!r}: it writes {self.path}, which "
                f"belongs to profile {self.owner!r} (store.profile); put {{profile}} in {self.key} to give each "
                "profile its own file")


def owners_only(settings: Settings, name: str, profile: str) -> OwnersOnly | None:
    """Why ``profile`` has no file in target ``name`` (a fixed path of another profile's), or None when it has."""
    target, owner = settings.targets[name], settings.store.profile
    raw = raw_path(settings, name)
    if target.output == "store" or "{profile}" in raw or profile == owner:
        return None
    return OwnersOnly(name, raw, f"targets.{name}.path" if target.path else "injection.file", owner, profile)


def profile_targets(settings: Settings, profile: str) -> tuple[list[ResolvedTarget], list[OwnersOnly]]:
    """The targets ``profile`` renders, resolved, and those it has no file in (rendered for store.profile only).
    Every other bad target raises, as :func:`resolve_target` does."""
    skipped = [found for name in settings.targets if (found := owners_only(settings, name, profile)) is not None]
    names = {found.name for found in skipped}
    return [resolve_target(settings, name, profile=profile) for name in settings.targets if name not in names], skipped


def resolve_target(settings: Settings, name: str, *, profile: str | None = None) -> ResolvedTarget:
    """A target with its fallbacks (path, budget, note) filled in, for ``profile`` (default store.profile).

    A target's file belongs to one profile: another profile may use it only
    if the path contains ``{profile}``, so one user's facts never reach
    another user's prompt.

    What only the settings, the profile and the environment's home decide is made once for these (frozen)
    settings; whether a per-profile path is another target's file is asked of the file system every time.
    """
    profile = settings.store.profile if profile is None else profile
    kept: dict[tuple[object, ...], ResolvedTarget] = settings.derived("resolved targets", _none_resolved)
    key = (name, profile, _home_key(settings, name))
    target = kept.get(key)
    if target is not None:
        if target.output == "file" and "{profile}" in raw_path(settings, name):
            _not_anothers(settings, name, profile, target.path)
        return target
    target = _resolve(settings, name, profile)
    if len(kept) >= KEPT_TARGETS:  # a host serving many profiles: keep memory bounded
        kept.clear()
    kept[key] = target
    return target


KEPT_TARGETS = 1024  # resolved targets kept per settings (each a few hundred bytes)


def _none_resolved(_: Settings) -> dict[tuple[object, ...], ResolvedTarget]:
    return {}


def _home_key(settings: Settings, name: str) -> tuple[object, ...]:
    """What a resolved target reads of the environment: ``~`` (``$HOME``) in its paths, and the Hermes home for a
    target whose path is the default one (both as they are now)."""
    return inputs.environ("HOME"), hermes_home() if _defaulted(settings, name) else None


def _defaulted(settings: Settings, name: str) -> bool:
    """Whether target ``name``'s path is the default persona file (in the Hermes home, as it is now)."""
    return not settings.injection.file and name in settings.targets and not settings.targets[name].path


def _resolve(settings: Settings, name: str, profile: str) -> ResolvedTarget:
    if name not in settings.targets:
        raise StageError(f"unknown target {name!r}; known targets: {', '.join(sorted(settings.targets))}")
    target = settings.targets[name]
    raw = raw_path(settings, name)
    if (theirs := owners_only(settings, name, profile)) is not None:
        raise AnotherProfilesFile(
            f"target {name!r} writes {raw}, which belongs to profile {theirs.owner!r} (store.profile); to use it for "
            f"profile {profile!r}, put {{profile}} in {theirs.key} or set store.profile"
        )
    # A store target's "path" only names its block (in run records); nothing is written there.
    path = (Path(f"store:{profile_slug(profile)}") / name if target.output == "store"
            else _usable(inputs.expanded(Path(raw.replace("{profile}", profile_slug(profile)))), name))
    if target.output == "file" and "{profile}" in raw:
        _not_anothers(settings, name, profile, path)
    return ResolvedTarget(
        name=name,
        template=target.template,
        path=path,
        budget=settings.cap.token_cap if target.budget is None else target.budget,
        boundary=target.boundary,
        note=settings.cap.truncation_note if target.truncation_note is None else target.truncation_note,
        template_dirs=tuple(inputs.expand_user(str(d)) for d in settings.render.template_dirs),
        output=target.output,
        profile=profile,
        region=target.region,
        region_at=target.region_at,
        scopes=scope_filter(settings, target),
        limits=tuple(target.limits),
        front_matter=front_matter(target.front_matter) if target.front_matter and target.output == "file" else "",
        interprets=_interprets(target.host),
    )


def _interprets(host: str | None) -> tuple[Syntax, ...]:
    """What the target's host's loader interprets (a target of no host we know: nothing)."""
    found = registry.HOSTS.get(host or "")
    return () if found is None else found.interprets


def _not_anothers(settings: Settings, name: str, profile: str, path: Path) -> None:
    """Refuse a per-profile path that, once expanded, is another target's own file (persona-{profile}.md for
    profile "export" is a fixed target's persona-export.md): that file holds its owner's persona."""
    for other, target in settings.targets.items():
        other_raw = raw_path(settings, other)
        if other == name or target.output == "store" or "{profile}" in other_raw:
            continue
        if same_file(path, inputs.expanded(Path(other_raw))):
            raise InputError(f"target {name!r} for profile {profile!r} would use {path}, which is target "
                             f"{other!r}'s file; give one of them another path")


NAME_MAX_BYTES = 255  # one file name, on Linux and macOS alike
PATH_MAX_BYTES = 4095


def _usable(path: Path, target: str) -> Path:
    """``path``, or an InputError if the system could never open it: a file name or the path too long."""
    parts = [part.encode("utf-8", "surrogateescape") for part in path.parts]
    if any(len(part) > NAME_MAX_BYTES for part in parts) or len(bytes(path)) > PATH_MAX_BYTES:
        raise InputError(f"target {target!r} writes {path}, whose name is longer than the system allows "
                         f"({NAME_MAX_BYTES} bytes a name, {PATH_MAX_BYTES} a path); shorten its path")
    return path
