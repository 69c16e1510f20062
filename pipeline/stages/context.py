"""The context every stage receives besides its input and options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..clock import Clock, utc_now
from ..config.schema import Settings
from ..config.targets import ResolvedTarget
from ..errors import StageError
from ..render import prepared as prepared_facts
from ..render.prepared import PreparedFacts
from ..render.tokens import TokenCounter
from ..store import PersonaStore

# In a run's cache: what a stored block's write sends after its COMMIT (runner.run_pipeline's ``then``).
AFTER_LAST_WRITE = "after the last write"


@dataclass
class StageContext:
    """What every stage may use besides its input and options."""

    settings: Settings
    store: PersonaStore
    counter: TokenCounter
    clock: Clock = utc_now
    reason: str = "explicit"
    dry_run: bool = False
    target: ResolvedTarget | None = None
    cache: dict[str, Any] = field(default_factory=dict)  # per-run memo, e.g. the config fingerprint
    explain: bool = False  # stages also say where every fact went (persona explain); costs time
    _prepared: PreparedFacts | None = None
    overwrite: bool = False  # replace a whole file persona-tier did not write (a copy of it is kept beside it)

    def for_target(self, target: ResolvedTarget) -> StageContext:
        return StageContext(self.settings, self.store, self.counter, self.clock, self.reason, self.dry_run,
                            target, self.cache, self.explain, self.prepared, self.overwrite)

    @property
    def scope(self) -> prepared_facts.Scope:
        return self.store.label, self.store.profile

    @property
    def prepared(self) -> PreparedFacts:
        """Each fact's text-derived values (dedupe key, line, token counts), shared by every stage of the run."""
        if self._prepared is None:
            self._prepared = prepared_facts.for_render(self.scope)
        return self._prepared

    def keep_prepared(self) -> None:
        """After a run: what it derived is kept for the profile's next render."""
        if self._prepared is not None:
            prepared_facts.keep(self.scope, self._prepared)

    def template_key(self, target: ResolvedTarget) -> tuple[object, ...]:
        """What a render of ``target`` depends on besides the facts: the template (the run's settings fingerprint,
        which holds every template's source, or on a dry run the template's source) and the target itself."""
        from ..render.template_sources import template_source

        limits = self.settings.render  # a render over a limit now must fail now, not be found from before
        source = self.cache.get("config_hash") or template_source(limits.template_dirs, target.template)
        return (source, target, tuple(limits.template_dirs), limits.timeout_s, limits.max_memory_mb,
                limits.max_output_chars)

    @property
    def current_target(self) -> ResolvedTarget:
        """The target a per-target stage is running for."""
        if self.target is None:
            raise StageError("this stage runs per target, but no target was given")
        return self.target
