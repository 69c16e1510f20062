"""One settings model, and the function that resolves it from every source.

Every setting is declared exactly once below, with its default and a
description. ``persona config init``, ``config show``, the README's table and
``config/persona.yaml`` are all derived from these fields.

Sources, highest precedence first:

1. explicit overrides (``--set key.path=value`` or ``load_settings(overrides=...)``)
2. ``MNEMOSYNE_PERSONA_*`` environment variables, ``__`` for nesting
3. the five legacy flat variables (``MNEMOSYNE_PERSONA_TOKEN_CAP`` ...)
4. YAML files (see :mod:`pipeline.config_files`)
5. the defaults declared here

Nothing is read at import time: each :func:`load_settings` call re-reads the
environment and the files.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .atomic import refuse_protected
from .cap import LINE_ENDS
from .config_files import ConfigLayer, load_layers, parse_value, resolve_config_files
from .errors import ConfigError, InputError, StageError
from .files import real_path, regular_file_kind
from .paths import default_db_path, default_persona_file, profile_slug
from .provenance import Provenance, validate_layers
from .urls import port_problem, redact_url

ENV_PREFIX = "MNEMOSYNE_PERSONA_"
CONFIG_ENV = "MNEMOSYNE_PERSONA_CONFIG"
ENV_SWITCHER = "MNEMOSYNE_ENV"
# Unprefixed variables that decide paths: checked for undecodable bytes like our own.
READ_ENV = frozenset({ENV_SWITCHER, "HERMES_HOME", "MNEMOSYNE_DATA_DIR"})

# The existing tier's flat variables, each mapped onto its nested field. Kept
# so that users' current environments keep working unchanged.
LEGACY_ENV = {
    "MNEMOSYNE_PERSONA_ENABLED": ("injection", "enabled"),
    "MNEMOSYNE_PERSONA_FILE": ("injection", "file"),
    "MNEMOSYNE_PERSONA_TOKEN_CAP": ("cap", "token_cap"),
    "MNEMOSYNE_PERSONA_INTERVAL": ("triggers", "interval"),
    "MNEMOSYNE_PERSONA_DAILY_SYNC_HOUR": ("triggers", "daily_sync_hour"),
}

Tier = Literal["permanent", "long_term", "working"]
TIERS: tuple[str, ...] = ("permanent", "long_term", "working")


MAX_TARGET_NAME = 100


class Section(BaseModel):
    """Base of every nested settings section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False)


class StoreSettings(Section):
    path: Path | None = Field(
        None,
        description="SQLite database. Empty means Mnemosyne's own: $MNEMOSYNE_DATA_DIR/mnemosyne.db, "
        "else $HERMES_HOME/mnemosyne/data/mnemosyne.db, else ~/.hermes/mnemosyne/data/mnemosyne.db.",
    )
    url: str | None = Field(
        None,
        description="A database URL; wins over path. postgresql://user@host:port/db for a PostgreSQL server, "
        "sqlite:///path or a bare path for a SQLite file.",
    )
    statement_timeout_ms: int = Field(
        30_000, ge=0, le=3_600_000,
        description="PostgreSQL: a statement running longer is cancelled with an error (0: no limit).",
    )

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        scheme, found, _ = value.partition("://")
        if found and f"{scheme}://" not in (*SERVER_SCHEMES, "sqlite://"):
            raise ValueError(f"unknown database scheme {scheme!r}: expected postgresql://user@host:port/db, "
                             "sqlite:///path, or a path")
        if found and scheme == "sqlite" and not value.removeprefix("sqlite://"):
            raise ValueError("sqlite:// needs a path, as in sqlite:///home/me/persona.db")
        if value.startswith(SERVER_SCHEMES):
            problem = port_problem(value)
            if problem:
                raise ValueError(f"not a valid PostgreSQL URL ({problem})")
            shown = urlsplit(redact_url(value))
            if not shown.path.strip("/") and "dbname=" not in shown.query:
                # libpq would pick a database named after the user; tables must not land somewhere unnamed.
                raise ValueError("names no database: expected postgresql://user@host:port/db")
        return value
    session: str = Field("default", min_length=1, description="Session or profile id whose facts are read and written.")
    memory_scope: Literal["all", "profile"] = Field(
        "all",
        description="Which working and episodic memories are a profile's, to promote and to count toward "
        "triggers.interval: all (one user's database; Mnemosyne files memories under conversation ids) or "
        "profile (memories whose session_id is the profile, as a shared database serving many users files them).",
    )
    busy_timeout_ms: int = Field(
        5000, ge=0, le=3_600_000, description="How long to wait for a locked database before failing."
    )
    max_fact_chars: int = Field(
        2000, ge=1, le=1_000_000,
        description="Longest fact accepted by add, promote and import; persona facts are short rules."
    )
    keep_runs: int = Field(
        100, ge=0, le=1_000_000,
        description="Run records (persona_runs) kept per profile; older ones are deleted at each render. "
        "0 keeps every one.",
    )


class InjectionSettings(Section):
    enabled: bool = Field(False, description="Master switch for prompt injection (legacy MNEMOSYNE_PERSONA_ENABLED).")
    file: Path | None = Field(
        None,
        description="The persona file: written by the default target, read by the injector "
        "(legacy MNEMOSYNE_PERSONA_FILE). Empty means $HERMES_HOME/memory/persona.md, else "
        "~/.hermes/memory/persona.md. `{profile}` in it expands to the profile id.",
    )
    header: str = Field(
        "# L3 Persona (Active Behavioral Rules)",
        description="Heading placed between the system prompt and the persona block.",
    )
    check_interval_ms: int = Field(
        250, ge=0, le=86_400_000, description="How often the injector may stat the file; 0 checks on every call."
    )
    target: str = Field("markdown", min_length=1, description="The target whose file the injector reads.")
    source: Literal["file", "store"] = Field(
        "file",
        description="file: the target's file on this host; store: the target's block in the database "
        "(the target needs output: store), so every host injects the same persona.",
    )
    mode: Literal["live", "session"] = Field(
        "live",
        description="live: the file as it is now (cached by mtime); session: the snapshot a session was first "
        "given, refreshed only at compaction.",
    )
    busy_timeout_ms: int = Field(
        50, ge=0, le=60_000,
        description="How long the prompt path waits for a locked database before serving the last good "
        "persona instead; a prompt build must never stall on another writer."
    )
    max_file_bytes: int = Field(
        1_000_000, ge=1, le=100_000_000,
        description="Most bytes of the persona file the injector reads; the rest is ignored, "
        "with a warning, so no file can exhaust the host's memory."
    )


class CapSettings(Section):
    token_cap: int = Field(
        1500, le=1_000_000, description="Token budget of the persona block (legacy MNEMOSYNE_PERSONA_TOKEN_CAP)."
    )
    counter: Literal["o200k_base", "cl100k_base", "heuristic"] = Field(
        "o200k_base", description="Token counter: exact o200k_base or cl100k_base, or a conservative heuristic."
    )
    truncation_note: str | None = Field(
        None,
        description="Line appended when facts were left out; it counts inside the budget. Empty means the "
        "template's own note, in its format (each shipped template has one).",
    )


class TriggerSettings(Section):
    interval: int = Field(
        50, ge=1, le=10_000_000,
        description="New working memories that trigger a regeneration (legacy MNEMOSYNE_PERSONA_INTERVAL)."
    )
    daily_sync_hour: int = Field(
        3,
        description="UTC hour of the daily regeneration; outside 0-23 disables it "
        "(legacy MNEMOSYNE_PERSONA_DAILY_SYNC_HOUR).",
    )
    explicit: bool = Field(True, description="Whether `persona tick --force` renders.")
    cold_start: bool = Field(True, description="Render when a target's file does not exist.")
    recovery: bool = Field(True, description="Render when a target's file is unreadable, or empty but should not be.")
    on_interval: bool = Field(True, description="Render after `interval` new working memories.")
    daily_sync: bool = Field(True, description="Render once per UTC day at or after `daily_sync_hour`.")
    store_changed: bool = Field(True, description="Render after a promote, demote, reinforce, import or eviction.")
    config_changed: bool = Field(True, description="Render when the settings or a template changed.")


class RetentionSettings(Section):
    enabled: bool = Field(True, description="Apply decay, expiry, eviction and auto-promotion on `persona tick`.")
    half_life_days: float = Field(
        180.0, gt=0, le=1e6,
        description="long_term: effective confidence halves per this many days without reinforcement."
    )
    evict_below: float = Field(
        0.05, ge=0, le=1, description="long_term: evict when effective confidence falls below this."
    )
    reinforce_step: float = Field(
        0.05, ge=0, le=1, description="Confidence added by each reinforcement, capped at 1.0."
    )
    working_ttl_hours: float = Field(
        720.0, gt=0, le=1e8, description="working: expire this many hours after the last reinforcement."
    )
    promote_after: int = Field(
        0, ge=0, le=1_000_000_000,
        description="working: move to long_term after this many reinforcements; 0 turns it off."
    )


class HermesSettings(Section):
    profile: Literal["fixed", "user_id"] = Field(
        "fixed",
        description="fixed: every Hermes user shares store.session; user_id: each user Hermes names (the "
        "gateway's user_id) gets their own profile, so the persona file path must contain {profile}.",
    )


class TargetSettings(Section):
    template: str = Field("persona.md.j2", min_length=1, description="Template file name.")
    output: Literal["file", "store"] = Field(
        "file",
        description="file: write `path`; store: write the rendered, capped text into the database "
        "(persona_blocks, per profile), where injectors on every host read it.",
    )
    path: Path | None = Field(
        None, description="Output file. Empty means injection.file. `{profile}` in it expands to the profile id."
    )
    budget: int | None = Field(None, le=1_000_000, description="Token budget. Empty means cap.token_cap.")
    boundary: str = Field("## ", min_length=1, description="A line starting with this begins a section.")
    truncation_note: str | None = Field(
        None, description="Note when facts are left out. Empty means cap.truncation_note, else the template's own."
    )

    @field_validator("boundary")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(char in LINE_ENDS for char in value):
            raise ValueError("must be the start of one line, without a line break in it")
        return value


class RenderSettings(Section):
    template_dirs: list[Path] = Field(
        default_factory=list, description="User template directories, searched before the built-in templates/."
    )
    timeout_s: float = Field(5.0, gt=0, le=3600, description="A template render is stopped after this many seconds.")
    max_memory_mb: int = Field(
        512, ge=64, le=65_536,
        description="Memory a user template's render process may use; it is stopped past this.",
    )
    max_output_chars: int = Field(
        5_000_000, ge=1, le=100_000_000, description="A template render is stopped past this many characters of output."
    )


StageEntry = str | dict[str, dict[str, Any]]


class Settings(BaseModel):
    """The resolved configuration. Build it with :func:`load_settings`.

    A plain pydantic model: the sources are layered by :func:`load_settings`,
    and pydantic-settings reads the ``MNEMOSYNE_PERSONA_*`` variables, imported
    only when one is set (it costs a quarter of a second to import).
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    store: StoreSettings = Field(default_factory=StoreSettings, description="The SQLite store.")
    injection: InjectionSettings = Field(default_factory=InjectionSettings, description="Prompt injection.")
    cap: CapSettings = Field(default_factory=CapSettings, description="The token cap shared by renderer and injector.")
    triggers: TriggerSettings = Field(default_factory=TriggerSettings, description="Regeneration triggers.")
    retention: RetentionSettings = Field(
        default_factory=RetentionSettings, description="What the tiers mean: decay, expiry, eviction."
    )
    render: RenderSettings = Field(default_factory=RenderSettings, description="Template lookup.")
    hermes: HermesSettings = Field(default_factory=HermesSettings, description="Hermes Agent integration.")
    pipeline: list[StageEntry] = Field(
        default_factory=lambda: list[StageEntry](["extract", "rank", "render", "cap", "write"]),
        description="Stages in order; each a bare name or `name: {options}` (see README, Stages).",
    )
    targets: dict[str, TargetSettings] = Field(
        default_factory=lambda: {"markdown": TargetSettings()},
        description="Named outputs; each has a template, a path, a budget and a section boundary.",
    )

    @field_validator("targets", mode="before")
    @classmethod
    def _targets_add_to_the_default(cls, value: Any) -> Any:
        """Targets named in a config are added to the default ``markdown`` one; ``markdown: null`` removes it."""
        if not isinstance(value, Mapping):
            return value
        merged = {"markdown": {}, **value}
        return {name: target for name, target in merged.items() if target is not None}

    @field_validator("targets")
    @classmethod
    def _target_names_are_plain(cls, value: dict[str, TargetSettings]) -> dict[str, TargetSettings]:
        # A name travels in file names, messages and the hosts' block announcements (tab-separated).
        for name in value:
            if not name.strip() or len(name) > MAX_TARGET_NAME or any(ord(c) < 32 or ord(c) == 127 for c in name):
                raise ValueError(f"target name {name!r} must be 1-{MAX_TARGET_NAME} characters with no control "
                                 "characters (tab, newline, ...)")
        return value

    # Which home-relative paths load_settings filled in (rather than the user setting them).
    _defaulted: frozenset[str] = PrivateAttr(default=frozenset())
    # The YAML files these settings were read from: no render may ever write over one.
    _config_files: tuple[Path, ...] = PrivateAttr(default=())

    @model_validator(mode="after")
    def _injected_target_exists(self) -> Settings:
        if self.injection.target not in self.targets:
            known = ", ".join(sorted(self.targets)) or "none"
            raise ValueError(f"injection.target {self.injection.target!r} is not a target (known: {known})")
        return self

    @model_validator(mode="after")
    def _store_source_has_a_store_target(self) -> Settings:
        target = self.targets[self.injection.target]
        if self.injection.source == "store" and target.output != "store":
            raise ValueError(f"injection.source is store, but target {self.injection.target!r} writes a file; set "
                             f"targets.{self.injection.target}.output: store")
        return self

    @model_validator(mode="after")
    def _per_user_paths(self) -> Settings:
        if self.hermes.profile != "user_id":
            return self
        target = self.targets[self.injection.target]
        if target.output == "store":
            return self  # blocks are keyed by profile
        path = target.path or self.injection.file
        if path is not None and "{profile}" not in str(path):
            key = f"targets.{self.injection.target}.path" if target.path else "injection.file"
            raise ValueError(f"hermes.profile is user_id, so {key} ({path}) must contain {{profile}}: "
                             "otherwise every user would share one persona file")
        return self

    @model_validator(mode="after")
    def _one_file_per_target(self) -> Settings:
        owners: dict[str, str] = {}
        for name, target in self.targets.items():
            if target.output == "store":
                continue
            where = str((target.path or self.injection.file or Path("<injection.file>")).expanduser())
            if where in owners:
                raise ValueError(f"targets {owners[where]!r} and {name!r} both write {where}; give each its own path "
                                 f"(targets.{name}.path)")
            owners[where] = name
        return self

    def protected_paths(self, *, besides: str | None = None, profile: str | None = None,
                        config_files: bool = True) -> dict[Path, str]:
        """Files a render must never write, each with what it is: the store, its journals, the config files
        these settings came from (unless ``config_files`` is off), and every target's file but ``besides``'s."""
        db = db_path(self)
        protected = {db: f"the database {db}"}
        protected |= {Path(f"{db}{end}"): f"the database's {end} file" for end in ("-wal", "-shm", "-journal")}
        if config_files:
            protected |= {path: f"the config file {path}" for path in self._config_files}
        for name, settings in self.targets.items():
            if name != besides and settings.output == "file":
                path = self.target(name, profile=profile if "{profile}" in self._raw_path(name) else None).path
                protected[path] = f"target {name!r}'s file"
        return protected

    def check_writable(self, target: ResolvedTarget, *, profile: str | None = None) -> None:
        """Raise unless ``target``'s file may be written: a regular file (or none yet, StageError), and none of
        :meth:`protected_paths` (InputError). Checked before anything is rendered, so a bad path changes nothing."""
        if target.in_store:
            return
        kind = regular_file_kind(target.path)
        if kind is not None:
            raise StageError(f"cannot write persona file {target.path}: it is {kind}")
        refuse_protected(target.path, self.protected_paths(besides=target.name, profile=profile),
                         what=f"target {target.name!r}'s persona")

    def _raw_path(self, name: str) -> str:
        return str(self.targets[name].path or self.injection.file or default_persona_file())

    def is_default(self, key: str) -> bool:
        """Whether a home-relative path (``store.path``, ``injection.file``) was left at its default."""
        return key in self._defaulted

    def target(self, name: str, *, profile: str | None = None) -> ResolvedTarget:
        """A target with its fallbacks (path, budget, note) filled in, for ``profile`` (default store.session).

        A target's file belongs to one profile: another profile may use it only
        if the path contains ``{profile}``, so one user's facts never reach
        another user's prompt.
        """
        if name not in self.targets:
            raise StageError(f"unknown target {name!r}; known targets: {', '.join(sorted(self.targets))}")
        target = self.targets[name]
        owner = self.store.session
        profile = owner if profile is None else profile
        raw = self._raw_path(name)
        if target.output == "file" and "{profile}" not in raw and profile != owner:
            key = f"targets.{name}.path" if target.path else "injection.file"
            raise InputError(
                f"target {name!r} writes {raw}, which belongs to profile {owner!r} (store.session); to use it for "
                f"profile {profile!r}, put {{profile}} in {key} or set store.session"
            )
        # A store target's "path" only names its block (in run records); nothing is written there.
        path = (Path(f"store:{profile_slug(profile)}") / name if target.output == "store"
                else _usable(Path(raw.replace("{profile}", profile_slug(profile))).expanduser(), name))
        return ResolvedTarget(
            name=name,
            template=target.template,
            path=path,
            budget=self.cap.token_cap if target.budget is None else target.budget,
            boundary=target.boundary,
            note=self.cap.truncation_note if target.truncation_note is None else target.truncation_note,
            template_dirs=tuple(str(Path(d).expanduser()) for d in self.render.template_dirs),
            output=target.output,
            profile=profile,
        )


NAME_MAX_BYTES = 255  # one file name, on Linux and macOS alike
PATH_MAX_BYTES = 4095


def _usable(path: Path, target: str) -> Path:
    """``path``, or an InputError if the system could never open it: a file name or the path too long."""
    parts = [part.encode("utf-8", "surrogateescape") for part in path.parts]
    if any(len(part) > NAME_MAX_BYTES for part in parts) or len(bytes(path)) > PATH_MAX_BYTES:
        raise InputError(f"target {target!r} writes {path}, whose name is longer than the system allows "
                         f"({NAME_MAX_BYTES} bytes a name, {PATH_MAX_BYTES} a path); shorten its path")
    return path


@dataclass(frozen=True, slots=True)
class ResolvedTarget:
    """A target as the pipeline and injector use it: every fallback applied."""

    name: str
    template: str
    path: Path
    budget: int
    boundary: str
    note: str | None  # configured; None means the template's own (see truncation_note)
    template_dirs: tuple[str, ...] = ()
    output: str = "file"  # or "store": the text goes to persona_blocks, keyed by (profile, name)
    profile: str = "default"

    @property
    def in_store(self) -> bool:
        return self.output == "store"

    def truncation_note(self) -> str:
        """The note to append when facts are left out: the configured one, else the template's own."""
        if self.note is not None:
            return self.note
        from .template_env import template_note  # Jinja only when a cap actually cuts
        from .template_files import search_path

        return template_note(search_path([Path(d) for d in self.template_dirs]), self.template)


def _legacy_env() -> dict[str, Any]:
    """The five legacy flat variables, nested onto their fields."""
    return _nest({path: os.environ[name] for name, path in LEGACY_ENV.items() if name in os.environ})


def _nest(flat: Mapping[tuple[str, ...], Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        node = nested
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
    return nested


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``["cap.token_cap=900"]`` into ``{"cap": {"token_cap": 900}}``.

    Values are read as YAML scalars, so ``900`` is an int and ``true`` a bool.
    """
    flat: dict[tuple[str, ...], Any] = {}
    problems = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            problems.append(f"--set {pair!r}: expected KEY.PATH=VALUE")
            continue
        flat[tuple(key.strip().split("."))] = parse_value(raw)
    if problems:
        raise ConfigError(problems)
    return _nest(flat)


def _expand_dotted(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Accept both ``{"cap": {"token_cap": 9}}`` and ``{"cap.token_cap": 9}``."""
    return _nest({tuple(key.split(".")): value for key, value in overrides.items()})


def _env_layers() -> list[ConfigLayer]:
    legacy = ConfigLayer("legacy-env", _legacy_env())
    ours = [name for name in os.environ if name.upper().startswith(ENV_PREFIX) and name not in LEGACY_ENV
            and name != CONFIG_ENV]
    if not ours:
        return [legacy, ConfigLayer("env", {})]
    from pydantic_settings import EnvSettingsSource, SettingsError

    try:
        values = EnvSettingsSource(Settings, case_sensitive=False, env_prefix=ENV_PREFIX,  # type: ignore[arg-type]
                                   env_nested_delimiter="__")()
    except SettingsError as error:
        # Structured settings (targets, pipeline, a whole section) are read from the environment as JSON.
        field = re.search(r'field "([^"]+)"', str(error))
        name = f"{ENV_PREFIX}{field.group(1).upper()}" if field else f"a {ENV_PREFIX}* variable"
        raise ConfigError([f"environment variable {name} must hold JSON for this structured setting"]) from None
    return [legacy, ConfigLayer("env", values)]


def _environment_problems() -> list[str]:
    """Variables we would read wrongly or not at all, each named.

    pydantic-settings skips prefixed names that map to no setting, and reads
    lower-case names as if they were upper case; both are errors here, so a
    typo never goes unnoticed and every variable is read by one rule.
    Values that are not valid UTF-8 (undecodable bytes) are errors too.
    """
    fields = {name.upper() for name in Settings.model_fields}
    known = set(LEGACY_ENV) | {CONFIG_ENV}
    problems = []
    for name in sorted(os.environ):
        if name in READ_ENV or name.upper().startswith(ENV_PREFIX):
            try:
                os.environ[name].encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"environment variable {name} is not valid UTF-8")
                continue
        if not name.upper().startswith(ENV_PREFIX) or name in known:
            continue
        if name != name.upper():
            problems.append(f"environment variable {name} is not upper case; persona-tier reads only "
                            f"upper-case names (did you mean {name.upper()}?)")
        elif name[len(ENV_PREFIX):].split("__", 1)[0] not in fields:
            problems.append(f"unknown environment variable {name}{_closest_env_hint(name)}")
    return problems


def load_settings(
    *,
    config_files: list[Path] | None = None,
    env_name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Resolve the settings from overrides, environment, legacy names, YAML and defaults."""
    return load_settings_with_provenance(config_files=config_files, env_name=env_name, overrides=overrides)[0]


def load_settings_with_provenance(
    *,
    config_files: list[Path] | None = None,
    env_name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Settings, Provenance]:
    """Like :func:`load_settings`, also saying where every effective value came from."""
    files = resolve_config_files(config_files, environ=os.environ)
    chosen_env = env_name if env_name is not None else os.environ.get(ENV_SWITCHER)
    layers = load_layers(files, chosen_env)
    layers += _env_layers()
    layers.append(ConfigLayer("override", _expand_dotted(overrides or {})))
    extra_problems = _environment_problems()
    settings, provenance = validate_layers(Settings, layers, extra_problems)
    settings = _with_default_paths(settings)
    settings._config_files = tuple(real_path(path) for path in files)
    return settings, provenance


def _with_default_paths(settings: Settings) -> Settings:
    """Fill the home-relative defaults now, so later calls agree whatever the environment does meanwhile.

    With one profile per Hermes user, the default persona file names the profile.
    """
    store, injection = settings.store, settings.injection
    defaulted = set()
    if store.path is None:
        store = store.model_copy(update={"path": default_db_path()})
        defaulted.add("store.path")
    if injection.file is None:
        file = default_persona_file()
        if settings.hermes.profile == "user_id":
            file = file.with_name("persona-{profile}.md")
        injection = injection.model_copy(update={"file": file})
        defaulted.add("injection.file")
    filled = settings.model_copy(update={"store": store, "injection": injection})
    filled._defaulted = frozenset(defaulted)
    return filled


def _closest_env_hint(name: str) -> str:
    candidates = [f"{ENV_PREFIX}{field.upper()}__" for field in Settings.model_fields] + list(LEGACY_ENV)
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


def db_path(settings: Settings) -> Path:
    """The SQLite file the settings point at (for a server URL, the file it would be without one)."""
    url = settings.store.url
    if url and not url.startswith(SERVER_SCHEMES):
        return Path(url.removeprefix("sqlite://")).expanduser()
    return (settings.store.path or default_db_path()).expanduser()


SERVER_SCHEMES = ("postgresql://", "postgres://")


def store_target(settings: Settings) -> Path | str:
    """What the store opens: a ``postgresql://`` URL, or a SQLite file's path."""
    url = settings.store.url
    return url if url and url.startswith(SERVER_SCHEMES) else db_path(settings)
