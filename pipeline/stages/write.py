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
from ..store.blocks import StoredBlock, block_and_newest, put_block, read_block
from .context import StageContext
from .ownership import LOCK_WAIT_S, foreign, keep_copy, refusal
from .registry import StageOptions, stage
from .run_report import dry_run, overtaken, record, report
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
    log.info("target %s: %s (%d/%d tokens, generation %d)", done.target, outcome, done.tokens, done.budget,
             generation)
    return done


def _write_block(capped: CappedRender, ctx: StageContext) -> TargetReport:
    """An `output: store` target: the block row replaces the file, in the transaction that records the run.

    Where a commit can stop waiting for the disk after its BEGIN (PostgreSQL), the current block is read inside
    the transaction, in the round trip that answers the stale check; elsewhere before it, to choose the BEGIN.
    """
    store, target = ctx.store, capped.rendered.target
    late = store.backend.features.relaxes_late and not ctx.dry_run
    previous = None if late else _text(read_block(store, target.name))
    if ctx.dry_run:
        return dry_run(capped, ctx, previous)
    generation = capped.rendered.ranked.generation
    with store.transaction(durable=late or previous != capped.text, batched=True) as conn:
        if late:  # the block and the stale check's newest generation, in one statement
            block, newest = block_and_newest(conn, store.profile, target.name, str(target.path))
            previous, stale = _text(block), newest is not None and generation < newest
            if previous == capped.text:  # the same bytes again: a record only, which need not wait for the disk
                store.backend.relax_commit(conn)
        else:
            stale = overtaken(store, target.path, generation)
        done = report(capped, previous, written=not stale and previous != capped.text, stale=stale)
        if done.written:
            put_block(store, conn, StoredBlock(store.profile, target.name, generation, done.sha256, capped.text,
                                               done.tokens, ctx.counter.name, store.now()))
            log.debug("wrote block %s of profile %s:\n%s", target.name, store.profile, capped.text)
        outcome = record(ctx, capped, done)
    log.info("target %s (store): %s (%d/%d tokens, generation %d)", done.target, outcome, done.tokens,
             done.budget, generation)
    return done


def _text(block: StoredBlock | None) -> str | None:
    return None if block is None else block.text
