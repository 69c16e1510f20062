"""write: atomic, locked, generation-checked, and silent when nothing changed."""

from __future__ import annotations

import logging
from pathlib import Path

from filelock import Timeout
from pydantic import Field

from ..errors import FileSystemError
from ..fs.lock import file_lock, lock_path
from ..fs.read import describe, read_regular_text
from ..fs.write import atomic_write_text, remove_stale_temps
from ..render.model import CappedRender, TargetReport
from ..store.block_write import write_at_once
from ..store.blocks import StoredBlock, put_block, read_block
from .context import AFTER_LAST_WRITE, StageContext
from .ownership import LOCK_WAIT_S, foreign, keep_copy, refusal, remember_render
from .registry import StageOptions, stage
from .run_report import dry_run, overtaken, record, report, run_of
from .write_region import write_region_target

log = logging.getLogger(__name__)


class WriteOptions(StageOptions):
    lock_timeout_s: float = Field(LOCK_WAIT_S, gt=0,
                                  description="How long to wait for another render of the same file.")


def read_current(path: Path) -> str | None:
    """The file's text, or None if it does not exist; anything but a regular file is refused."""
    try:
        return read_regular_text(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise FileSystemError(f"cannot write persona file {path}: it {describe(error)}") from None


@stage("write", options=WriteOptions, per_target=True)
def write(capped: CappedRender, *, ctx: StageContext, options: WriteOptions) -> TargetReport:
    """Replace the target file atomically, unless a newer render is already there."""
    path = capped.rendered.target.path
    if capped.rendered.target.in_store:
        return _write_block(capped, ctx)
    if capped.rendered.target.output == "region":
        return write_region_target(capped, ctx, options.lock_timeout_s)
    if ctx.dry_run:
        return dry_run(capped, ctx, read_current(path))
    try:  # a missing directory is made by the atomic write, once there is something to write
        with file_lock(lock_path(path), options.lock_timeout_s):
            return _write_locked(capped, ctx, path)
    except Timeout:
        raise FileSystemError(f"persona file {path} is locked by another render (waited {options.lock_timeout_s} s)") \
            from None
    except OSError as error:
        raise FileSystemError(f"cannot write persona file {path}: {error.strerror or error}") from None


def _write_locked(capped: CappedRender, ctx: StageContext, path: Path) -> TargetReport:
    remove_stale_temps(path)
    previous = read_current(path)
    generation = capped.rendered.ranked.generation
    if previous is not None and previous != capped.text:  # checked again under the lock: a save since the plan
        theirs = foreign(ctx.store, path)
        if theirs is not None and not ctx.overwrite:
            raise refusal(path, capped.rendered.target.name)
        if theirs is not None:
            log.warning("target %s: %s was not written by persona-tier; its bytes are kept in %s",
                        capped.rendered.target.name, path, keep_copy(path, theirs, ctx.clock))
    # The file is replaced inside the transaction that records the run: a database that cannot take
    # the record (locked, read-only) fails the render before the file changes. A run that changes
    # nothing records only that it looked, which need not wait for the disk.
    with ctx.store.transaction(durable=previous != capped.text):
        stale = overtaken(ctx.store, path, generation)
        written = not stale and previous != capped.text
        if written:
            atomic_write_text(path, capped.text)
            log.debug("wrote %s:\n%s", path, capped.text)
        done = report(capped, previous, written=written, stale=stale)
        outcome = record(ctx, capped, done)
    if written:
        remember_render(ctx.store, path, done.sha256)
    log.info("target %s: %s (%d/%d tokens, generation %d)", done.target, outcome, done.tokens, done.budget,
             generation)
    return done


def _write_block(capped: CappedRender, ctx: StageContext) -> TargetReport:
    """An `output: store` target: the block row replaces the file, in the transaction that records the run.

    Where a commit can stop waiting for the disk after its BEGIN (PostgreSQL), the server decides in the one
    statement that writes (:mod:`pipeline.store.block_write`), and the transaction is one round trip; elsewhere
    the current block is read before it, to choose the BEGIN.
    """
    store, target = ctx.store, capped.rendered.target
    if store.backend.features.relaxes_late and not ctx.dry_run:
        return _write_block_at_once(capped, ctx)
    previous = _text(read_block(store, target.name))
    if ctx.dry_run:
        return dry_run(capped, ctx, previous)
    generation = capped.rendered.ranked.generation
    with store.transaction(durable=previous != capped.text, batched=True) as conn:
        stale = overtaken(store, target.path, generation)
        done = report(capped, previous, written=not stale and previous != capped.text, stale=stale)
        if done.written:
            put_block(store, conn, StoredBlock(store.profile, target.name, generation, done.sha256, capped.text,
                                               done.tokens, ctx.counter.name, store.now()))
            log.debug("wrote block %s of profile %s:\n%s", target.name, store.profile, capped.text)
        outcome = record(ctx, capped, done)
    return _logged(done, outcome, generation)


def _write_block_at_once(capped: CappedRender, ctx: StageContext) -> TargetReport:
    store, target = ctx.store, capped.rendered.target
    generation = capped.rendered.ranked.generation
    draft = report(capped, None, written=True, stale=False)  # what does not depend on the block it replaces
    block = StoredBlock(store.profile, target.name, generation, draft.sha256, capped.text, draft.tokens,
                        ctx.counter.name, store.now())
    with store.transaction(batched=True, then=ctx.cache.pop(AFTER_LAST_WRITE, None)) as conn:
        sent = write_at_once(store, conn, block, run_of(ctx, capped, draft, "written"),
                             keep=ctx.settings.store.keep_runs)
    previous, outcome = sent.answer()
    if outcome == "written":
        log.debug("wrote block %s of profile %s:\n%s", target.name, store.profile, capped.text)
    return _logged(report(capped, previous, written=outcome == "written", stale=outcome == "stale"), outcome,
                   generation)


def _logged(done: TargetReport, outcome: str, generation: int) -> TargetReport:
    log.info("target %s (store): %s (%d/%d tokens, generation %d)", done.target, outcome, done.tokens,
             done.budget, generation)
    return done


def _text(block: StoredBlock | None) -> str | None:
    return None if block is None else block.text
