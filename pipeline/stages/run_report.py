"""What the write stages share: one target's report, and its run record in ``persona_runs``."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from ..render.explain import explain
from ..render.model import CappedRender, TargetReport
from ..store import PersonaStore
from ..store.births import writers
from ..store.runs import Outcome, RunRecord, newest_generation, record_run
from .context import StageContext


def report(capped: CappedRender, previous: str | None, *, written: bool, stale: bool) -> TargetReport:
    """What one target's run did, compared with ``previous`` (the text it replaced, None for none)."""
    target, ranked = capped.rendered.target, capped.rendered.ranked
    kept_topics = {section.topic for section in capped.kept}
    held = sum(len(section.facts) for section in capped.kept)
    every_section = len(kept_topics) == len(ranked.sections)  # the usual render: no section left out
    return TargetReport(
        target=target.name,
        path=target.path,
        facts_extracted=ranked.facts_extracted,
        sections_kept=len(capped.kept),
        sections_dropped=len(ranked.sections) - len(capped.kept),
        dropped_topics=() if every_section else tuple(s.topic for s in ranked.sections if s.topic not in kept_topics),
        fitted_out=sum(1 for s in ranked.sections if s.topic in kept_topics for r in s.facts
                       if r.fact.key in capped.fitted_out) if capped.fitted_out else 0,
        tokens=capped.capped.tokens,
        budget=capped.capped.budget,
        changed=previous != capped.text,
        written=written,
        stale=stale,
        sha256=hashlib.sha256(capped.text.encode("utf-8")).hexdigest(),
        text=capped.text,
        previous=previous,
        facts_written=held,
        facts_left_out=ranked.facts_extracted + ranked.out_of_scope - held,
        tokens_exact=capped.capped.exact,
    )


def dry_run(capped: CappedRender, ctx: StageContext, previous: str | None) -> TargetReport:
    """The report of a run that writes nothing, with where every fact went when ``persona explain`` asks."""
    done = report(capped, previous, written=False, stale=False)
    if not ctx.explain:
        return done
    with ctx.store.read() as conn:
        written = writers(conn, ctx.store.profile)
    return replace(done, explanation=explain(capped, ctx.counter, written))


def overtaken(store: PersonaStore, path: Path, generation: int) -> bool:
    """Whether a render of a newer store generation already wrote ``path``: then this one must not."""
    newest = newest_generation(store, path)
    return newest is not None and generation < newest


def record(ctx: StageContext, capped: CappedRender, done: TargetReport) -> Outcome:
    """Record the run (inside the caller's transaction), trimming the profile's old records; its outcome."""
    outcome: Outcome = "stale" if done.stale else "written" if done.written else "unchanged"
    record_run(ctx.store, run_of(ctx, capped, done, outcome), keep=ctx.settings.store.keep_runs)
    return outcome


def run_of(ctx: StageContext, capped: CappedRender, done: TargetReport, outcome: Outcome) -> RunRecord:
    """The run record of ``done`` with ``outcome``."""
    ranked = capped.rendered.ranked
    return RunRecord(done.target, done.path, ctx.reason, done.sha256, done.tokens, done.budget, done.sections_kept,
                     done.sections_dropped, ranked.generation, ranked.memory_watermark, outcome,
                     ctx.cache.get("config_hash"), ctx.counter.name)
