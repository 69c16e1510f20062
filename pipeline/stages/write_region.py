"""The write stage for an `output: region` target: our region of a file the user owns, locked and recorded."""

from __future__ import annotations

import logging
from pathlib import Path

from filelock import Timeout

from ..config.targets import region_id
from ..errors import FileSystemError
from ..fs.lock import file_lock, lock_path
from ..fs.region_file import current_region, region_path, write_region
from ..fs.write import ensure_private_dir, remove_stale_temps
from ..render.model import CappedRender, TargetReport
from .context import StageContext
from .run_report import dry_run, overtaken, record, report

log = logging.getLogger(__name__)


def write_region_target(capped: CappedRender, ctx: StageContext, lock_timeout_s: float) -> TargetReport:
    """Splice the capped text into the target's region, unless a newer render is already there."""
    target = capped.rendered.target
    path = region_path(target.path)
    if ctx.dry_run:
        return dry_run(capped, ctx, current_region(path, region_id(target), ctx.settings.render.max_region_file_bytes))
    ensure_private_dir(path.parent)
    try:
        with file_lock(lock_path(path), lock_timeout_s):
            return _locked(capped, ctx, path)
    except Timeout:
        raise FileSystemError(f"persona file {path} is locked by another render (waited {lock_timeout_s} s)") from None
    except OSError as error:
        raise FileSystemError(f"cannot write the persona region of {path}: {error.strerror or error}") from None


def _locked(capped: CappedRender, ctx: StageContext, path: Path) -> TargetReport:
    remove_stale_temps(path)
    target, generation = capped.rendered.target, capped.rendered.ranked.generation
    max_bytes = ctx.settings.render.max_region_file_bytes
    with ctx.store.transaction():
        if overtaken(ctx.store, target.path, generation):
            done = report(capped, current_region(path, region_id(target), max_bytes), written=False, stale=True)
        else:
            outcome = write_region(path, capped.text, region_id(target), place=target.region_at, max_bytes=max_bytes)
            done = report(capped, outcome.previous, written=outcome.written, stale=False)
        state = record(ctx, capped, done)
    log.info("target %s (region of %s): %s (%d/%d tokens, generation %d)", done.target, path, state, done.tokens,
             done.budget, generation)
    return done
