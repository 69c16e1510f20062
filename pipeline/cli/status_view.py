"""What `persona status` says, as one text: the command prints it, and keeps it with what it read, so the next
status with nothing changed is answered from that record (:mod:`pipeline.deliver`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import inputs
from ..text import counted
from .checks import check_line, target_checks
from .host_checks import head_lines
from .plain import CliState, table

if TYPE_CHECKING:
    from ..config.host_loads import Check
    from ..config.load_report import HostReport

def status_text(cli: CliState, profile: str | None, as_json: bool) -> str:
    """Each trigger's state and reason, the last run, the fact counts per tier, the targets and open proposals."""
    data, checks, reports = _gathered(cli, profile)
    if data["history_scrub"]["pending"]:
        data["history_scrub"] = _finish_scrub(cli, profile)
    if as_json:
        return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"
    said: list[str] = []
    _show(data, checks, reports, said.append)
    return "".join(line + "\n" for line in said)


def _show(data: dict[str, Any], checks: list[Check], reports: list[HostReport], echo: Callable[[str], object]
          ) -> None:
    rows = [[t["name"], "on" if t["enabled"] else "off", "FIRES" if t["fired"] else "-", t["reason"]]
            for t in data["triggers"]]
    echo(table(["TRIGGER", "ENABLED", "STATE", "REASON"], rows))
    last = data["last_run"]
    echo(f"\nlast run: {last['run_at'] + ' UTC, generation ' + str(last['generation']) if last else 'never'}")
    echo("facts: " + ", ".join(f"{tier} {count}" for tier, count in data["facts"].items()))
    echo(f"database: {data['database']}")
    if checks:  # what each host will load of ours (`persona targets check` exits 1 when one would be cut)
        echo("\ntargets:\n" + "\n".join("  " + check_line(check) for check in checks))
    if reports:  # per host and project: each fact once, the user's files loaded whole
        echo("\nhosts:\n" + "\n".join("  " + line for line in head_lines(reports)))
    _say_scrub(data["history_scrub"], echo)
    held = data["held"]
    if held["agents"] or held["learned"]:
        echo(f"\nheld for your approval (`persona review`): {counted(held['agents'], 'agent write')}, "
             f"{counted(held['learned'], 'learned fact')}")
    if data["deleted_elsewhere"]:
        echo(f"\ndeleted elsewhere: another tool deleted {counted(data['deleted_elsewhere'], 'fact')} since the last "
             "status; no row of persona-tier's keeps them, and the next render leaves them out")
    if data["proposals"]:
        from .review_cmds import proposal_line

        echo(f"\n{counted(len(data['proposals']), 'open proposal')} (`persona review` to accept or dismiss):")
        echo("\n".join(proposal_line(proposal) for proposal in data["proposals"]))


def _gathered(cli: CliState, profile: str | None) -> tuple[dict[str, Any], list[Check], list[HostReport]]:
    from ..config.urls import describe_database
    from ..schedule.history_journal import pending
    from ..schedule.triggers import status_data
    from ..store.vanished import noted
    from .host_checks import host_reports, projects_to_check

    with cli.store(profile, readonly=True) as store:
        data = status_data(cli.settings(), store)
        data["history_scrub"] = {"pending": len(pending(store))}
        data["deleted_elsewhere"] = noted(store)
    if data["deleted_elsewhere"]:
        data["deleted_elsewhere"] = _look(cli, profile)
    data["database"] = describe_database(cli.settings()).removeprefix("database: ")
    checks = target_checks(cli, profile)
    data["targets"] = [check.as_dict() for check in checks]
    reports = host_reports(cli, profile, projects_to_check(cli, None))
    data["hosts"] = [report.as_dict() for report in reports]
    return data, checks, reports


def _look(cli: CliState, profile: str | None) -> int:
    """How many facts another tool deleted since the last status, with every row of ours keyed by them swept."""
    from ..store.vanished import looked

    # What it says is of this run alone (the next status counts from nothing), never replayed.
    inputs.note("work", "deleted elsewhere", "!status counted the facts another tool deleted")
    with cli.store(profile) as store:
        return looked(store)


def _finish_scrub(cli: CliState, profile: str | None) -> dict[str, Any]:
    """Finish the profile's pending scrubs of the hosts' histories (a forget killed or interrupted left them)."""
    from ..schedule.history_journal import pending, scrub_after

    # This status did a forget's unfinished work: what it says is of this run alone, never replayed.
    inputs.note("work", "history scrub", "!status finished a forget's scrub of the hosts' histories")
    with cli.store(profile) as store:
        waiting = pending(store)
        done = scrub_after(store, [])
        return {"pending": len(pending(store)), "since": min(item.recorded_at for item in waiting) if waiting else None,
                "finished": done.to_dict()}


def _say_scrub(scrub: dict[str, Any], echo: Callable[[str], object]) -> None:
    """What status did with a forget's pending scrub of the hosts' histories."""
    done = scrub.get("finished")
    if done is None:
        return
    files, left = len(done["files"]), [*done["left"], *done["short"]]
    state = (f"still pending (a later status or `persona scrub` goes on; recorded {scrub['since']})"
             if scrub["pending"] else "finished")
    echo(f"\nhost histories: a forget's scrub was pending; {state}: the text replaced in "
         f"{counted(files, 'file')}, {counted(len(left), 'place')} still holding it")
    for item in left:
        echo(f"  {item['path']} ({item['host']}): {item.get('reason') or 'a short fact inside other text'}")
