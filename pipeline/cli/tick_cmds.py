"""`persona status`, `persona tick`, `persona watch` and `persona retention`."""

from __future__ import annotations

import gc
import logging
import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import InputError, PersonaError
from ..text import counted

if TYPE_CHECKING:
    from ..schedule.learn import Learned
    from ..schedule.tick import ProfileTick, TickResult
    from ..store import PersonaStore
from .common import CliState, JsonOption, ProfileOption, emit_json, shown, state
from .learn_cmds import learned_line, say_unreadable

log = logging.getLogger(__name__)


def register(app: typer.Typer) -> None:
    app.command("status")(status)
    app.command("tick")(tick_command)
    app.command("watch")(watch)
    app.command("retention")(retention)



def status(ctx: typer.Context, profile: ProfileOption = None, as_json: JsonOption = False) -> None:
    """Show each trigger's state and reason, the last run and fact counts per tier."""
    from ..inject import delivery
    from .status_view import status_text

    with delivery.recording() as recorded:  # the next status with nothing changed replays this (pipeline.deliver)
        text = status_text(state(ctx), profile, as_json)
    typer.echo(text, nl=False)
    delivery.keep(recorded, text)


def _say(result: TickResult, keep_days: int) -> str:
    lines = [f"evicted #{a.persona_id}: {a.why}" if a.action == "evict" else f"promoted #{a.persona_id}: {a.why}"
             for a in result.retention]
    if result.pruned_snapshots:
        lines.append(f"pruned {counted(result.pruned_snapshots, 'session snapshot')} unused for "
                     f"{counted(keep_days, 'day')}")
    if result.rendered:
        lines.append(f"rendered ({result.reason})")
        lines += [f"  {r.target}: {r.tokens_shown}/{r.budget} tokens -> {r.path} "
                  f"({'written' if r.written else 'unchanged'})" for r in result.reports]
    elif result.skipped:
        lines.append(f"nothing rendered ({result.reason}): this profile has no file in any target (see the warning)")
    else:
        lines.append("nothing to do: no trigger fired")
    return "\n".join(lines)


def _warn_skipped(result: TickResult) -> None:
    for warning in result.skipped:
        typer.echo(f"warning: {warning}", err=True)


def tick_command(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Render even if no other trigger fires.")] = False,
    profile: ProfileOption = None,
    all_profiles: Annotated[bool, typer.Option(
        "--all-profiles", help="Tick every profile in the database; several workers share the work.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Apply retention, then render every target if any trigger fires. Safe to run often."""
    from ..schedule.tick import tick

    cli = state(ctx)
    if all_profiles:
        if profile is not None:
            raise InputError("--all-profiles ticks every profile; leave out --profile")
        _tick_all(cli, force, as_json)
        return
    with cli.store(profile) as store:
        learned = _learn(cli, store)
        result = tick(cli.settings(), store=store, force=force)
    emit_json(result.to_dict()) if as_json else typer.echo(_say(result, cli.settings().store.keep_snapshot_days))
    if learned is not None and (learned.added or learned.held) and not as_json:
        typer.echo(learned_line(learned))
    _warn_skipped(result)


def _learn(cli: CliState, store: PersonaStore) -> Learned | None:
    """Learn from the hosts' memory before the tick renders (its facts are rendered with the rest), when
    ``learn.on_tick`` asks; a memory file that cannot be read, or a learn that fails, is a warning: the tick goes
    on."""
    from ..schedule.learn import learn

    if not cli.settings().learn.on_tick:
        return None
    try:
        done = learn(cli.settings(), store)
    except PersonaError as error:
        typer.echo(f"warning: persona learn failed: {error}", err=True)
        return None
    say_unreadable(done)
    return done


def _tick_all(cli: CliState, force: bool, as_json: bool) -> None:
    from ..schedule.tick import tick_all

    # What the imports and the settings made lives for the whole sweep: collections between its renders need not
    # walk it again and again. Given back to the collector once the sweep is done (a test process goes on).
    gc.freeze()
    try:
        ticks = tick_all(cli.settings(), force=force)
    finally:
        gc.unfreeze()
    if as_json:
        emit_json([t.to_dict() for t in ticks])
    else:
        for t in ticks:
            if t.outcome != "up to date":  # thousands of these say nothing a count does not
                typer.echo(f"{shown(t.profile)}: {t.outcome}" + (f" ({shown(t.error)})" if t.error else ""))
        counts = {outcome: sum(t.outcome == outcome for t in ticks)
                  for outcome in ("rendered", "nothing to do", "up to date", "busy", "failed")}
        typer.echo(f"{counted(len(ticks), 'profile')}: " + ", ".join(f"{n} {outcome}" for outcome, n in counts.items()))
        _warn_skipped_all(ticks)
    if any(t.outcome == "failed" for t in ticks):
        raise typer.Exit(1)


def _warn_skipped_all(ticks: list[ProfileTick]) -> None:
    """One warning for the profiles a sweep found with no file in a target, not one per profile."""
    first = [t.result.skipped[0] for t in ticks if t.result is not None and t.result.skipped]
    if first:
        typer.echo(f"warning: {counted(len(first), 'profile')} not rendered into every target; the first: {first[0]}",
                   err=True)


def watch(
    ctx: typer.Context,
    every: Annotated[float, typer.Option("--every", min=0.05, help="Seconds between ticks.")] = 60.0,
    profile: ProfileOption = None,
) -> None:
    """Run tick in a loop, for machines without cron. Stops cleanly on SIGINT or SIGTERM.

    Settings are read again before every tick, so config edits are picked up
    (and the config trigger fires); a tick that fails is reported and retried
    at the next interval rather than ending the loop.
    """
    cli = state(ctx)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.is_set():
            _watch_once(cli, profile)
            stop.wait(every)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    typer.echo("watch stopped", err=True)


def _watch_once(cli: CliState, profile: str | None) -> None:
    from ..schedule.learn import learn_due
    from ..schedule.tick import tick
    from ..store import PersonaStore

    try:
        settings = cli.fresh_settings()
        with PersonaStore.from_settings(settings, profile=profile) as store:
            learn_due(settings, store)  # as a tick learns first (learn.on_tick); a file it cannot read is a warning
            result = tick(settings, store=store)
    except PersonaError as error:
        log.error("tick failed, retrying at the next interval: %s", error)
        return
    if result.rendered or result.retention or result.pruned_snapshots:
        typer.echo(_say(result, settings.store.keep_snapshot_days))
    _warn_skipped(result)


def retention(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be evicted or promoted.")] = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Apply retention now (evict decayed or expired facts, auto-promote), or list it with --dry-run."""
    from ..schedule.retention import apply_retention

    cli = state(ctx)
    settings = cli.settings()
    with cli.store(profile, readonly=dry_run) as store:
        actions = apply_retention(store, settings.retention, dry_run=dry_run)
    if as_json:
        emit_json({"dry_run": dry_run, "enabled": settings.retention.enabled,
                   "actions": [a.to_dict() for a in actions]})
        return
    if not settings.retention.enabled:
        typer.echo("retention is off (retention.enabled = false)")
    verb = {"evict": "would evict" if dry_run else "evicted", "promote": "would promote" if dry_run else "promoted"}
    for action in actions:
        typer.echo(f"{verb[action.action]} #{action.persona_id} ({action.tier}, topic {shown(action.topic, 60)}): "
                   f"{action.why}")
    if settings.retention.enabled and not actions:
        typer.echo("nothing to evict or promote")
