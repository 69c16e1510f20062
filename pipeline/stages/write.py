"""write: atomic, locked, generation-checked, and silent when nothing changed."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import replace
from pathlib import Path

from filelock import Timeout
from pydantic import Field

from ..errors import StageError
from ..fs.lock import file_lock
from ..fs.read import describe, read_regular_text
from ..fs.write import atomic_write_text, ensure_private_dir, remove_stale_temps
from ..render.explain import explain
from ..render.model import CappedRender, TargetReport
from ..store.blocks import StoredBlock, put_block, read_block
from ..store.runs import Outcome, RunRecord, newest_generation, record_run
from .context import StageContext
from .registry import StageOptions, stage
from .write_region import write_region_target

log = logging.getLogger(__name__)


class WriteOptions(StageOptions):
    lock_timeout_s: float = Field(30.0, gt=0, description="How long to wait for another render of the same file.")


def lock_path(path: Path) -> Path:
    """The sibling lock file; never the target, because os.replace swaps the target's inode."""
    return path.with_name(path.name + ".lock")


def read_current(path: Path) -> str | None:
    """The file's text, or None if it does not exist; anything but a regular file is refused."""
    try:
        return read_regular_text(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise StageError(f"cannot write persona file {path}: it {describe(error)}") from None


@stage("write", options=WriteOptions, per_target=True)
def write(capped: CappedRender, *, ctx: StageContext, options: WriteOptions) -> TargetReport:
    """Replace the target file atomically, unless a newer render is already there."""
    path = capped.rendered.target.path
    if capped.rendered.target.in_store:
        return _write_block(capped, ctx)
    if capped.rendered.target.output == "region":
        return write_region_target(capped, ctx, options.lock_timeout_s, _report,
                                   lambda capped_, report, outcome: _record_run(ctx, capped_, report, outcome))
    if ctx.dry_run:
        previous = read_current(path)
        report = _report(capped, previous, written=False, stale=False)
        return replace(report, explanation=explain(capped, ctx.counter)) if ctx.explain else report
    ensure_private_dir(path.parent)
    try:
        with file_lock(lock_path(path), options.lock_timeout_s):
            return _write_locked(capped, ctx, path)
    except Timeout:
        raise StageError(f"persona file {path} is locked by another render (waited {options.lock_timeout_s} s)") \
            from None
    except OSError as error:
        raise StageError(f"cannot write persona file {path}: {error.strerror or error}") from None


def _write_locked(capped: CappedRender, ctx: StageContext, path: Path) -> TargetReport:
    remove_stale_temps(path)
    previous = read_current(path)
    generation = capped.rendered.ranked.generation
    # The file is replaced inside the transaction that records the run: a database that cannot take
    # the record (locked, read-only) fails the render before the file changes. A run that changes
    # nothing records only that it looked, which need not wait for the disk.
    with ctx.store.transaction(durable=previous != capped.text):
        newest = newest_generation(ctx.store, path)
        stale = newest is not None and generation < newest
        written = not stale and previous != capped.text
        if written:
            atomic_write_text(path, capped.text)
            log.debug("wrote %s:\n%s", path, capped.text)
        report = _report(capped, previous, written=written, stale=stale)
        outcome: Outcome = "stale" if stale else "written" if written else "unchanged"
        record_run(ctx.store, _record(capped, report, ctx.reason, outcome, ctx.cache.get("config_hash"),
                                      ctx.counter.name), keep=ctx.settings.store.keep_runs)
    log.info("target %s: %s (%d/%d tokens, generation %d)", report.target, outcome, report.tokens, report.budget,
             generation)
    return report


def _write_block(capped: CappedRender, ctx: StageContext) -> TargetReport:
    """An `output: store` target: the block row replaces the file, in the transaction that records the run."""
    store, target = ctx.store, capped.rendered.target
    current = read_block(store, target.name)
    previous = None if current is None else current.text
    if ctx.dry_run:
        report = _report(capped, previous, written=False, stale=False)
        return replace(report, explanation=explain(capped, ctx.counter)) if ctx.explain else report
    generation = capped.rendered.ranked.generation
    with store.transaction(durable=previous != capped.text) as conn:
        newest = newest_generation(store, target.path)
        stale = newest is not None and generation < newest
        written = not stale and previous != capped.text
        report = _report(capped, previous, written=written, stale=stale)
        if written:
            put_block(store, conn, StoredBlock(store.profile, target.name, generation, report.sha256, capped.text,
                                               report.tokens, ctx.counter.name, store.now()))
            log.debug("wrote block %s of profile %s:\n%s", target.name, store.profile, capped.text)
        outcome: Outcome = "stale" if stale else "written" if written else "unchanged"
        record_run(store, _record(capped, report, ctx.reason, outcome, ctx.cache.get("config_hash"),
                                  ctx.counter.name), keep=ctx.settings.store.keep_runs)
    log.info("target %s (store): %s (%d/%d tokens, generation %d)", report.target, outcome, report.tokens,
             report.budget, generation)
    return report


def _record_run(ctx: StageContext, capped: CappedRender, report: TargetReport, outcome: Outcome) -> None:
    record_run(ctx.store, _record(capped, report, ctx.reason, outcome, ctx.cache.get("config_hash"), ctx.counter.name),
               keep=ctx.settings.store.keep_runs)


def _report(capped: CappedRender, previous: str | None, *, written: bool, stale: bool) -> TargetReport:
    target, ranked = capped.rendered.target, capped.rendered.ranked
    kept_topics = {section.topic for section in capped.kept}
    return TargetReport(
        target=target.name,
        path=target.path,
        facts_extracted=ranked.facts_extracted,
        sections_kept=len(capped.kept),
        sections_dropped=len(ranked.sections) - len(capped.kept),
        dropped_topics=tuple(s.topic for s in ranked.sections if s.topic not in kept_topics),
        fitted_out=sum(1 for s in ranked.sections if s.topic in kept_topics for r in s.facts
                       if r.fact.key in capped.fitted_out),
        tokens=capped.capped.tokens,
        budget=capped.capped.budget,
        changed=previous != capped.text,
        written=written,
        stale=stale,
        sha256=hashlib.sha256(capped.text.encode("utf-8")).hexdigest(),
        text=capped.text,
        previous=previous,
    )


def _record(capped: CappedRender, report: TargetReport, reason: str, outcome: Outcome, fingerprint: str | None,
            counter: str) -> RunRecord:
    ranked = capped.rendered.ranked
    return RunRecord(report.target, report.path, reason, report.sha256, report.tokens, report.budget,
                     report.sections_kept, report.sections_dropped, ranked.generation, ranked.memory_watermark,
                     outcome, fingerprint, counter)
