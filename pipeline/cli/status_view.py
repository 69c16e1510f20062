"""What `persona status` says, as one text: the command prints it, and keeps it with what it read, so the next
status with nothing changed is answered from that record (:mod:`pipeline.deliver`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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
    if data["proposals"]:
        from .review_cmds import proposal_line

        echo(f"\n{counted(len(data['proposals']), 'open proposal')} (`persona review` to accept or dismiss):")
        echo("\n".join(proposal_line(proposal) for proposal in data["proposals"]))


def _gathered(cli: CliState, profile: str | None) -> tuple[dict[str, Any], list[Check], list[HostReport]]:
    from ..config.urls import describe_database
    from ..schedule.triggers import status_data
    from .host_checks import host_reports, projects_to_check

    with cli.store(profile, readonly=True) as store:
        data = status_data(cli.settings(), store)
    data["database"] = describe_database(cli.settings()).removeprefix("database: ")
    checks = target_checks(cli, profile)
    data["targets"] = [check.as_dict() for check in checks]
    reports = host_reports(cli, profile, projects_to_check(cli, None))
    data["hosts"] = [report.as_dict() for report in reports]
    return data, checks, reports
