"""The context every stage receives besides its input and options."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..clock import Clock, utc_now
from ..config.schema import Settings
from ..config.targets import ResolvedTarget
from ..errors import StageError
from ..render import prepared as prepared_facts
from ..render.prepared import PreparedFacts
from ..render.tokens import ExactCounter, TokenCounter, plain_exact, segments
from ..store import PersonaStore, segment_counts, token_counts

if TYPE_CHECKING:
    from ..render.model import RankedSection

# In a run's cache: what a stored block's write sends after its COMMIT (runner.run_pipeline's ``then``).
AFTER_LAST_WRITE = "after the last write"
NEW_COUNTS = "new token counts"  # in a run's cache: (encoding, id, text, tokens) counted by this run, to keep
NEW_SEGMENTS = "new segment counts"  # in a run's cache: {encoding: {segment: tokens}} counted by this run, to keep


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
        """After a run: what it derived is kept for the profile's next render, and the facts it counted (exactly,
        for the first time) are kept in the store, so no process counts them again."""
        if self._prepared is not None:
            prepared_facts.keep(self.scope, self._prepared)
        counted: list[tuple[str, int, str, int]] = self.cache.pop(NEW_COUNTS, [])
        if counted and not self.dry_run:
            for encoding in sorted({row[0] for row in counted}):
                token_counts.keep(self.store, encoding, [row[1:] for row in counted if row[0] == encoding])
        for encoding, found in sorted(self.cache.pop(NEW_SEGMENTS, {}).items()):
            if not self.dry_run:
                segment_counts.keep(self.store, encoding, found)

    def render_bound(self, text: str, counter: ExactCounter) -> tuple[int, bool]:
        """A bound of ``text``'s count under ``counter`` from its segments (:func:`~pipeline.render.tokens.segments`):
        each one's kept count (this process's, else the store's), else its byte length; and whether every segment
        had one (the bound is then the exact count). Loads no tokenizer."""
        whole = self.prepared.known(counter.name, [text])  # counted before, as a whole, in this process
        if whole:
            return whole[text], True
        parts = segments(text)
        known = self.prepared.known(counter.name, parts)
        if len(known) < len(set(parts)):
            stored = segment_counts.known(self.store, counter.name, [p for p in set(parts) if p not in known])
            self.prepared.note(counter.name, stored)
            known.update(stored)
        return sum(known[part] if part in known else counter.bound(part) for part in parts), len(known) == len(
            set(parts))

    def keep_segments(self, text: str, counter: ExactCounter) -> None:
        """Count ``text``'s segments this process and the store never counted, to keep with the run (a render that
        fit whole, counted with the tokenizer loaded: the next one, in any process, counts none of them)."""
        if not (counter.loaded and counter.exact):
            return
        parts = list(dict.fromkeys(segments(text)))
        known = self.prepared.known(counter.name, parts)
        todo = [part for part in parts if part not in known]
        if todo:
            found = dict(zip(todo, counter.count_many(todo), strict=True))
            self.prepared.note(counter.name, found)
            self.cache.setdefault(NEW_SEGMENTS, {}).setdefault(counter.name, {}).update(found)

    def fact_tokens(self, texts: Sequence[str], counter: TokenCounter,
                    sections: Sequence[RankedSection]) -> list[int]:
        """Exact counts of facts' texts under ``counter``: this process's memo first, then the store's kept counts
        (by fact id and text digest), and only then the tokenizer."""
        ids = {r.fact.content: int(r.fact.key[2:]) for s in sections for r in s.facts if r.fact.key.startswith("p:")}
        return self.prepared.tokens(texts, counter, missing=lambda todo: self._stored_tokens(todo, counter, ids))

    def _stored_tokens(self, texts: Sequence[str], counter: TokenCounter, ids: dict[str, int]) -> list[int]:
        exact = {text: found for text in texts if text in ids and (found := plain_exact(counter, text)) is not None}
        if not exact:
            return counter.count_many(texts)
        encoding = next(iter(exact.values())).name
        kept = token_counts.known(self.store, encoding, {ids[text]: text for text in exact})
        todo = [text for text in texts if ids.get(text) not in kept]
        counts = dict(zip(todo, counter.count_many(todo), strict=True))
        new = self.cache.setdefault(NEW_COUNTS, [])
        new += [(found.name, ids[text], text, counts[text]) for text, found in exact.items()
                if text in counts and found.exact]
        return [counts[text] if text in counts else kept[ids[text]] for text in texts]

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
