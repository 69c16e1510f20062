"""The settings schema: every setting declared exactly once, with its default and a description.

``persona config init``, ``config show``, the docs' configuration reference
and ``config/persona.yaml`` are all derived from these fields. The sources are
layered by :mod:`pipeline.config.load`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .. import caches, inputs
from ..fs.locations import profile_slug
from ..tiers import TIERS, Tier
from .control import LearnSettings, WritesSettings
from .sections import (
    CapSettings,
    HermesSettings,
    InjectionSettings,
    RenderSettings,
    RetentionSettings,
    Section,
    StoreSettings,
    SupersedeSettings,
    TargetSettings,
    TopicSettings,
    TriggerSettings,
    UiSettings,
)
from .targets import MAX_TARGET_NAME, ResolvedTarget

T = TypeVar("T")

__all__ = [
    "TIERS",
    "CapSettings",
    "HermesSettings",
    "InjectionSettings",
    "LearnSettings",
    "RenderSettings",
    "ResolvedTarget",
    "RetentionSettings",
    "Section",
    "Settings",
    "StoreSettings",
    "SupersedeSettings",
    "TargetSettings",
    "Tier",
    "TopicSettings",
    "TriggerSettings",
    "UiSettings",
    "WritesSettings",
]

StageEntry = str | dict[str, dict[str, Any]]


def _may_share(where: str, first: tuple[str, TargetSettings], second: tuple[str, TargetSettings]) -> None:
    (one, a), (two, b) = first, second
    if a.output == b.output == "region" and a.region != b.region:
        return
    if a.output == b.output == "region":
        raise ValueError(f"targets {one!r} and {two!r} both write the region {a.region or '(unnamed)'} of {where}; "
                         f"give one its own region name (targets.{two}.region) or its own path")
    raise ValueError(f"targets {one!r} and {two!r} both write {where}; give each its own path "
                     f"(targets.{two}.path)")


# What each Settings object derives (a target resolved, a stage plan, a project's identity), by name; a copy with
# changes starts empty. Settings are frozen, so an entry never goes stale while its settings live.
DERIVED = caches.per_object("schema.derived", owner="settings", key="what is derived, by name", bound=256,
                            holds_text=False)
_NOT_YET: Any = object()


class Settings(BaseModel):
    """The resolved configuration. Build it with :func:`load_settings`.

    A plain pydantic model: the sources are layered by :func:`load_settings`,
    and pydantic-settings reads the ``MNEMOSYNE_PERSONA_*`` variables, imported
    only when one is set (it costs a quarter of a second to import).
    """

    model_config = ConfigDict(extra="forbid", validate_default=True, frozen=True)

    store: StoreSettings = Field(default_factory=StoreSettings, description="The SQLite store.")
    injection: InjectionSettings = Field(default_factory=InjectionSettings, description="Prompt injection.")
    cap: CapSettings = Field(default_factory=CapSettings, description="The token cap shared by renderer and injector.")
    triggers: TriggerSettings = Field(default_factory=TriggerSettings, description="Regeneration triggers.")
    retention: RetentionSettings = Field(
        default_factory=RetentionSettings, description="What the tiers mean: decay, expiry, eviction."
    )
    render: RenderSettings = Field(default_factory=RenderSettings, description="Template lookup.")
    hermes: HermesSettings = Field(default_factory=HermesSettings, description="Hermes Agent integration.")
    supersede: SupersedeSettings = Field(
        default_factory=SupersedeSettings,
        description="One fact replacing another: detection proposes, the writer decides (`persona review`).",
    )
    ui: UiSettings = Field(default_factory=UiSettings, description="`persona ui`: the local page.")
    topics: TopicSettings = Field(default_factory=TopicSettings, description="Topics: one spelling each.")
    writes: WritesSettings = Field(default_factory=WritesSettings, description="What agents may write.")
    learn: LearnSettings = Field(default_factory=LearnSettings, description="Learning from the hosts' own memory.")
    pipeline: list[StageEntry] = Field(
        default_factory=lambda: list[StageEntry](["extract", "rank", "render", "cap", "write"]),
        description="Stages in order; each a bare name or `name: {options}` (see docs/rendering.md, Stages).",
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
            if name.startswith("@"):  # a reader's view of a target is stored under '@' and a digest
                raise ValueError(f"target name {name!r} must not start with '@'")
        return value

    # Which home-relative paths load_settings filled in (rather than the user setting them).
    _defaulted: frozenset[str] = PrivateAttr(default=frozenset())
    # The YAML files these settings were read from: no render may ever write over one.
    _config_files: tuple[Path, ...] = PrivateAttr(default=())
    # Derived once per instance (frozen, so it cannot go stale); a copy made with changes starts empty.
    _derived: caches.Cache[str, Any] = PrivateAttr(default_factory=DERIVED.new)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Settings:
        copy = super().model_copy(update=update, deep=deep)
        copy._derived = DERIVED.new()
        return copy

    def derived(self, name: str, make: Callable[[Settings], T]) -> T:
        """``make(self)``, computed once for these settings: they are frozen, so it cannot change."""
        private = self.__pydantic_private__  # a render asks several times: not through pydantic's __getattr__
        memo: caches.Cache[str, Any] = private["_derived"] if private is not None else self._derived
        found = memo.get(name, _NOT_YET)
        if found is _NOT_YET:
            found = make(self)
            memo.put(name, found)
        return cast(T, found)

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
        if self.hermes.profile == "fixed":
            return self
        target = self.targets[self.injection.target]
        if target.output == "store":
            return self  # blocks are keyed by profile
        path = target.path or self.injection.file
        if path is not None and "{profile}" not in str(path):
            key = f"targets.{self.injection.target}.path" if target.path else "injection.file"
            raise ValueError(f"hermes.profile is {self.hermes.profile}, so {key} ({path}) must contain {{profile}}: "
                             "otherwise every user would share one persona file")
        return self

    @model_validator(mode="after")
    def _one_file_per_target(self) -> Settings:
        """Two targets share a file only as two regions with different names; ``{profile}`` is expanded first
        (for store.profile), so ``a-{profile}.md`` and ``a-default.md`` are seen to be one file."""
        owners: dict[str, tuple[str, TargetSettings]] = {}
        for name, target in self.targets.items():
            if target.output == "store":
                continue
            raw = str(target.path or self.injection.file or Path("<injection.file>"))
            where = inputs.expand_user(str(Path(raw.replace("{profile}", profile_slug(self.store.profile)))))
            if where in owners:
                _may_share(where, owners[where], (name, target))
            owners.setdefault(where, (name, target))
        return self

    def is_default(self, key: str) -> bool:
        """Whether a home-relative path (``store.path``, ``injection.file``) was left at its default."""
        return key in self._defaulted

    @property
    def config_files(self) -> tuple[Path, ...]:
        """The YAML files these settings were read from: no render may ever write over one."""
        return self._config_files
