"""A host's whole load set in one project, measured: each file's part and whose text it holds (ours, the user's),
the total against the host's limits in their unit, what is cut and whose text that is, and each fact of ours that
would arrive twice (two of our files, or a file and the session-start hook).

`persona targets check`, `status` and the page's "What each agent sees" show it. The facts and the hook's text
come from the caller (the store and the injector are floors above this one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..hosts import registry
from ..hosts.escapes import Escape, escape_for
from ..hosts.model import Limit, MemoryFiles, Unit
from ..text import fact_form
from .host_loads import our_span, read_bounded, size_in
from .load_sets import HTML_COMMENT, LoadSet, load_set, spelled_names
from .targets import ResolvedTarget

if TYPE_CHECKING:  # `persona status` runs without pydantic
    from .schema import Settings

UNITS = {"chars": "characters"}
HooksOf = Callable[[str, Path], "list[Delivery]"]  # host, project -> what our hook gives that host there


@dataclass(frozen=True, slots=True)
class Delivery:
    """Text of ours the host receives: a target's part of a loaded file, or the hook's output."""

    label: str  # "/home/u/.claude/CLAUDE.md (target claude-code)", "the SessionStart hook (~/.claude/...)"
    text: str


def no_hooks(host: str, project: Path) -> list[Delivery]:
    """Where hooks are not read (below the CLI, nothing can tell which settings file runs ours)."""
    return []


@dataclass(frozen=True, slots=True)
class FileReport:
    path: Path
    part: str
    size: int  # in the report's unit
    ours: int  # of which ours (a region, markers included, or the whole file)
    target: str | None  # the target writing our part
    ours_at: int = 0  # where our part starts, in the unit
    cut: str = ""  # "cut after 120 bytes: 3,400 of yours and 800 of ours not loaded"

    def as_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "part": self.part, "size": self.size, "ours": self.ours,
                "yours": self.size - self.ours, "target": self.target, "cut": self.cut}


@dataclass(frozen=True, slots=True)
class HostReport:
    """One host in one project: what it loads, measured, and what is wrong with it."""

    host: str
    display: str
    project: Path
    unit: Unit
    files: tuple[FileReport, ...]
    hooks: tuple[Delivery, ...]
    measures: tuple[str, ...]  # "33,012 of 32,768 bytes for the whole chain", "no limit documented"
    problems: tuple[str, ...]  # a fact twice, a user's file displaced: `targets check` exits 1
    warnings: tuple[str, ...]  # the host cuts the user's own text
    dropped: str = ""  # what the host takes out of what it sends

    @property
    def failed(self) -> bool:
        return bool(self.problems)

    def as_dict(self) -> dict[str, object]:
        return {"target": f"{self.host} in {self.project}", "host": self.host, "project": str(self.project),
                "path": str(self.project), "loaded": [str(f.path) for f in self.files],
                "files": [f.as_dict() for f in self.files], "hooks": [hook.label for hook in self.hooks],
                "unit": self.unit, "measures": list(self.measures), "problems": list(self.problems),
                "warnings": list(self.warnings), "outcome": "; ".join(self.problems) or "each fact once",
                "cut": self.failed}


def host_reports(settings: Settings, targets: Sequence[ResolvedTarget], projects: Sequence[Path],
                 facts: Callable[[], Sequence[str]], hooks_of: HooksOf, home: Path) -> list[HostReport]:
    """Each host a target of ours or our hook (``hooks_of(host, project)``) reaches, in each of ``projects`` where
    it loads something of ours: its whole load set, measured. ``facts()`` (the facts' texts) is read once, and
    only where a delivery of ours reaches one host beside another or beside the user's own text: a fact can arrive
    twice nowhere else, so `status` over a file of ours alone costs no read of the facts."""
    hosts = {settings.targets[target.name].host for target in targets}
    texts: list[Sequence[str]] = []

    def once() -> Sequence[str]:
        if not texts:
            texts.append(facts())
        return texts[0]

    reports = []
    for host in registry.HOSTS.values():
        for project in projects:
            hooks = hooks_of(host.name, project)
            if host.name not in hosts and not hooks:
                continue
            report = host_report(load_set(host, project, home), targets, host_limits(host.name), hooks, once)
            if hooks or any(file.target for file in report.files):
                reports.append(report)
    return reports


def host_limits(host: str) -> tuple[Limit, ...]:
    """The host's limits on its files: its main preset's (the others declare the same)."""
    found = registry.HOSTS[host]
    preset = found.presets.get(host) or next(iter(found.presets.values()), None)
    return () if preset is None else preset.limits


def project_dirs(settings: Settings, also: Sequence[Path] = ()) -> list[Path]:
    """Every project directory a target names, then ``also`` (the working directory), each once."""
    named = [inputs.expanded(Path(t.project)).resolve() for t in settings.targets.values() if t.project]
    return list(dict.fromkeys([*named, *(path.resolve() for path in also)]))


def host_report(found: LoadSet, targets: Sequence[ResolvedTarget], limits: Sequence[Limit],
                hooks: Sequence[Delivery], facts: Callable[[], Sequence[str]]) -> HostReport:
    """``found`` measured: ``targets`` say which bytes are ours, ``limits`` are the host's (file and chain),
    ``hooks`` what its session-start hook gives it there, ``facts()`` the texts of the profile's facts."""
    unit: Unit = next((limit.unit for limit in limits if limit.unit != "tokens"), "chars")
    by_path = {target.path.resolve(): target for target in targets if target.output != "store"}
    files, deliveries, yours = [], [], []
    for loaded in found.files:
        data = read_bounded(loaded.path) or b""
        target = by_path.get(loaded.path)
        span = None if target is None else our_span(target, data)
        ours = 0 if span is None else size_in(data[span[0]:span[1]], unit)
        files.append(FileReport(loaded.path, loaded.part, size_in(data, unit), ours,
                                None if span is None or target is None else target.name,
                                0 if span is None else size_in(data[:span[0]], unit)))
        if span is not None and target is not None:
            deliveries.append(Delivery(f"{loaded.path} (target {target.name})",
                                       data[span[0]:span[1]].decode("utf-8", errors="replace")))
        own = data if span is None else data[:span[0]] + data[span[1]:]
        if own.strip():
            yours.append(Delivery(f"your own {loaded.path}", own.decode("utf-8", errors="replace")))
    counted = [loaded.counted for loaded in found.files]
    cut_files, measures, warnings = _cuts(files, counted, limits, unit, found)
    escape = escape_for(found.host.interprets)
    delivered = [*deliveries, *hooks]
    problems = _twice(delivered, facts, escape) + _yours_too(delivered, yours, facts, escape) + \
        _displaced(found, by_path)
    model = found.host.load
    dropped = "HTML comments (our region's markers)" if isinstance(model, MemoryFiles) and model.drops_comments \
        else ""
    return HostReport(found.host.name, found.host.display, found.project, unit, tuple(cut_files), tuple(hooks),
                      tuple(measures), tuple(problems), tuple(warnings), dropped)


def _cuts(files: list[FileReport], counted: list[bool], limits: Sequence[Limit], unit: Unit,
          found: LoadSet) -> tuple[list[FileReport], list[str], list[str]]:
    """Each file with what the host's limits cut of it; the measures; a warning per file whose user text is cut."""
    cuts, measures = _limit_cuts(files, counted, [limit for limit in limits if limit.unit == unit])
    if not measures:
        measures.append(f"{sum(f.size for f in files):,} {_unit(unit)} in these files; {found.host.display} "
                        "documents no limit on them")
    out = [file if index not in cuts else _cut(file, cuts[index], unit) for index, file in enumerate(files)]
    warnings = [f"warning: {found.host.display} cuts your own text: {file.path} after {cuts[index]:,} "
                f"{_unit(unit)}; {lost:,} {_unit(unit)} of yours never reach it"
                for index, file in enumerate(files) if index in cuts
                for lost in [_lost(file, cuts[index])[0]] if lost > 0]
    return out, measures, warnings


def _limit_cuts(files: list[FileReport], counted: list[bool], limits: list[Limit]) -> tuple[dict[int, int], list[str]]:
    """File index -> how much of it the host loads, for each file a limit cuts; each limit's measure."""
    measures: list[str] = []
    cuts: dict[int, int] = {}
    for limit in limits:
        unit = _unit(limit.unit)
        if limit.scope == "chain":
            total = 0
            for index in (index for index, count in enumerate(counted) if count):
                if total + files[index].size > limit.amount:
                    cuts[index] = min(cuts.get(index, files[index].size), max(0, limit.amount - total))
                total += files[index].size
            measures.append(f"{total:,} of {limit.amount:,} {unit} for the whole chain")
            continue
        for index, file in enumerate(files):
            if file.size > limit.amount:
                cuts[index] = min(cuts.get(index, file.size), limit.amount)
        measures.append(f"largest file {max((f.size for f in files), default=0):,} of {limit.amount:,} {unit} a file")
    return cuts, measures


def _lost(file: FileReport, keep: int) -> tuple[int, int]:
    """How much of the user's text and of ours is past ``keep``: (yours, ours)."""
    ours = max(0, file.ours_at + file.ours - max(keep, file.ours_at))
    return file.size - keep - ours, ours


def _cut(file: FileReport, keep: int, unit: Unit) -> FileReport:
    yours, ours = _lost(file, keep)
    text = f"cut after {keep:,} {_unit(unit)}: {yours:,} of yours and {ours:,} of ours not loaded"
    return FileReport(file.path, file.part, file.size, file.ours, file.target, file.ours_at, text)


def _twice(deliveries: Sequence[Delivery], facts: Callable[[], Sequence[str]], escape: Escape | None) -> list[str]:
    """Each group of deliveries that hold the same facts: a fact would reach the host twice. A file holds a fact as
    the render wrote it for the host (``escape``), the hook as it is."""
    groups: dict[tuple[str, ...], int] = {}
    lines = [{line.strip().removeprefix("- ").removeprefix("* ") for line in d.text.splitlines()}
             for d in deliveries] if len(deliveries) > 1 else []
    for fact in facts() if len(deliveries) > 1 else ():
        # a fact is a line of its own in our templates: one fact inside a longer one is not it; a template that
        # writes facts inline is searched as text
        forms = {fact, fact if escape is None else escape(fact)}
        holders = tuple(d.label for d, held in zip(deliveries, lines, strict=True) if forms & held) or \
            tuple(d.label for d in deliveries if fact and any(form in d.text for form in forms))
        if len(holders) > 1:
            groups[holders] = groups.get(holders, 0) + 1
    return [f"{count} fact{'s' * (count != 1)} would arrive {_times(len(holders))}: in "
            f"{' and in '.join(holders)}" for holders, count in groups.items()]


def _yours_too(ours: Sequence[Delivery], yours: Sequence[Delivery], facts: Callable[[], Sequence[str]],
               escape: Escape | None) -> list[str]:
    """Each file of the user's own text that states a fact one of ours gives the host too (a line of theirs that is
    the same fact, :func:`~pipeline.text.fact_form`): the host reads it twice all the same."""
    if not ours or not yours:
        return []
    forms = [{fact_form(line) for line in own.text.splitlines()} - {""} for own in yours]
    groups: dict[tuple[str, ...], int] = {}
    for fact in facts():
        form = fact_form(fact)
        theirs = tuple(own.label for own, held in zip(yours, forms, strict=True) if form in held)
        written = {fact, fact if escape is None else escape(fact)}
        mine = tuple(d.label for d in ours if fact and any(form in d.text for form in written))
        if theirs and mine:
            groups[(*theirs, *mine)] = groups.get((*theirs, *mine), 0) + 1
    return [f"{count} fact{'s' * (count != 1)} would arrive {_times(len(holders))}: in {' and in '.join(holders)} "
            f"(take {'it' if count == 1 else 'them'} out of your file, or `persona forget` "
            f"{'it' if count == 1 else 'them'})" for holders, count in groups.items()]


def _times(count: int) -> str:
    return "twice" if count == 2 else f"{count} times"


def _displaced(found: LoadSet, ours: dict[Path, ResolvedTarget]) -> list[str]:
    """A user's file the host no longer loads because a file of ours stands in its place (Claude Code's AGENTS.md
    beside a CLAUDE.md that holds nothing but our region: one the user wrote is their choice)."""
    model = found.host.load
    if not isinstance(model, MemoryFiles):
        return []
    problems = []
    for path, _ in found.skipped:
        shadow = next((f for f in (path.parent / name for name in model.names) if f.resolve() in ours), None)
        if shadow is not None and _ours_alone(shadow, ours[shadow.resolve()], model.blank_is_absent):
            problems.append(f"{found.host.display} no longer loads your {path}: {shadow} holds target "
                            f"{ours[shadow.resolve()].name!r} and the host reads {spelled_names(model)} in its "
                            f"place; add a line @{path.name} to {shadow.name}, or `persona targets remove` it and "
                            f"`persona targets add {found.host.name} --rules --project {path.parent}`")
    return problems


def _ours_alone(path: Path, target: ResolvedTarget, comments_blank: bool) -> bool:
    """Whether ``path`` holds nothing of the user's: only our region (or the whole file is ours) and blank lines,
    and HTML comments where the host reads a file of them alone as no file (Claude Code)."""
    data = read_bounded(path) or b""
    span = our_span(target, data)
    if span is None:
        return False
    rest = (data[:span[0]] + data[span[1]:]).decode("utf-8", errors="replace")
    return not (HTML_COMMENT.sub("", rest) if comments_blank else rest).strip()


def _unit(unit: str) -> str:
    return UNITS.get(unit, unit)


def report_lines(report: HostReport) -> list[str]:
    """The report in words: a head line, each file, the hook, the measures, then what is wrong."""
    verdict = f"{len(report.problems)} problem{'s' * (len(report.problems) != 1)}" if report.problems else \
        "each fact once"
    lines = [f"{report.host} in {report.project}: {verdict}", *(f"  problem: {p}" for p in report.problems)]
    for file in report.files:
        whose = "ours" if file.ours == file.size and file.ours else \
            f"yours {file.size - file.ours:,}, ours {file.ours:,}" if file.ours else "yours"
        lines.append(f"  {file.path} ({file.part}; {file.size:,} {_unit(report.unit)}, {whose}"
                     f"{'; target ' + file.target if file.target else ''}{'; ' + file.cut if file.cut else ''})")
    lines += [f"  {hook.label} ({len(hook.text):,} characters, ours)" for hook in report.hooks]
    lines += [f"  {measure}" for measure in report.measures]
    lines += [f"  the host drops {report.dropped}"] if report.dropped else []
    lines += [f"  {warning}" for warning in report.warnings]
    return lines
