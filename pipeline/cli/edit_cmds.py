"""`persona edit`: the profile's facts in the user's editor; on save, what will change, then one transaction.

The file lives in a private temporary directory (0700, the file 0600) and is
deleted afterwards, unless it holds an edit that was not applied (the profile
changed meanwhile, a dry run, the editor left with problems unfixed): then its
path is named, so nothing typed is lost. The saved file is read back by its
path once the editor exits, so an editor that writes in place and one that
writes a new file and renames it over the old one both work.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .. import inputs
from ..errors import EditConflict, EditError, PersonaError
from ..text import counted
from .common import JsonOption, ProfileOption, emit_json, say_rendered, shown, state
from .forget_cmds import say_edit_files, say_histories, warn_histories, warn_unfinished

if TYPE_CHECKING:
    from ..config.schema import Settings
    from ..interchange.edit import Applied, Plan, Step
    from ..interchange.edit_file import EditBase
    from ..schedule.after_write import WriteRender
    from ..store import PersonaStore

DEFAULT_EDITOR = "vi"
MAX_ROUNDS = 20  # an editor that never fixes the file (a script gone wrong) is not reopened forever
TEXT_WIDTH = 60


def register(app: typer.Typer) -> None:
    app.command("edit")(edit)


@dataclass(frozen=True)
class Options:
    forget: bool
    force: bool
    dry_run: bool
    yes: bool = False


def edit(
    ctx: typer.Context,
    forget: Annotated[bool, typer.Option(
        "--forget", help="Forget the facts whose entries you delete for real (as `persona forget`), instead of "
                         "demoting them.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="Take in text that was forgotten (persona forget) or demoted.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show what the saved file would change and apply nothing (the file is kept).")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", help="Apply an edit that removes more than half the profile's facts without asking (else it is "
                      "asked on a terminal, and refused without one).")] = False,
    profile: ProfileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Open the profile's facts in $VISUAL or $EDITOR (ids, topics, tiers, keys; who wrote each as a comment);
    on save, show what changes (added, changed, removed) and apply it all in one transaction."""
    from ..interchange.edit import EDIT_WRITER
    from ..interchange.edit_file import edit_text, read_base
    from ..store import PersonaStore

    cli = state(ctx)
    settings = cli.settings()
    options = Options(forget, force, dry_run, yes)
    with PersonaStore.from_settings(settings, profile=profile, writer=EDIT_WRITER) as store:
        base = read_base(store)
        with EditFile.create(store.profile, edit_text(base, store.label, forget=forget)) as file:
            result = _edit(store, base, file, editor_command(), options, quiet=as_json)
            _finish(settings, store, result, file, as_json)


def editor_command() -> list[str]:
    """$VISUAL, else $EDITOR, else vi; split as a shell would (``code --wait``)."""
    for name in ("VISUAL", "EDITOR"):
        words = shlex.split(inputs.environ(name) or "")
        if words:
            return words
    return [DEFAULT_EDITOR]


@dataclass
class EditFile:
    """The private file the editor opens: what was shown first and last, and whether it must be kept."""

    path: Path
    original: str
    shown: str = ""
    kept: bool = False
    dropped: bool = False  # an aborted edit that holds nothing to keep

    @classmethod
    def create(cls, profile: str, text: str) -> EditFile:
        from ..fs.edit_files import new_edit_file

        made = cls(new_edit_file(profile), text)  # in a directory of its own, 0700
        made.show(text)
        return made

    def __enter__(self) -> EditFile:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        # A failure no message named the file in (a lost server, Ctrl-C).
        if kind is not None and not (self.kept or self.dropped):
            with contextlib.suppress(PersonaError):
                if self.keep_note(self.read()):
                    typer.echo(f"persona edit: nothing was applied; your edit is kept in {self.path}", err=True)
        if not self.kept:
            shutil.rmtree(self.path.parent, ignore_errors=True)

    def show(self, text: str) -> None:
        """Write ``text`` for the editor to open (0600)."""
        from ..fs.write import atomic_write_bytes

        atomic_write_bytes(self.path, text.encode("utf-8", "surrogateescape"))
        self.shown = text

    def edit(self, command: list[str]) -> str:
        """Run the editor on the file and read back what it saved (by path: in place, or renamed over it)."""
        try:
            done = subprocess.run([*command, str(self.path)], check=False)
        except OSError as error:
            raise EditError(f"cannot start the editor `{shlex.join(command)}` ($VISUAL, $EDITOR): "
                            f"{error.strerror}; nothing was applied") from None
        saved = self.read()
        if done.returncode != 0:
            raise EditError(f"the editor `{shlex.join(command)}` exited with status {done.returncode}; nothing was "
                            f"applied{self.keep_note(saved)}")
        return saved

    def read(self) -> str:
        from ..fs.read import read_regular_bytes

        try:
            return read_regular_bytes(self.path).decode("utf-8", "surrogateescape")
        except OSError as error:
            raise EditError(f"cannot read the edited file {self.path} back ({error.strerror}); nothing was "
                            "applied") from None

    def keep_note(self, saved: str) -> str:
        """Keep the file when it holds anything the user typed; the words that say where it is."""
        if saved == self.original or not saved.strip():
            return ""
        if saved != self.shown:
            self.show(saved)
        self.kept = True
        return f"; your edit is kept in {self.path}"


@dataclass
class Result:
    """How the edit ended: the plan (None: nothing saved), and what was applied."""

    plan: Plan | None = None
    applied: Applied | None = None
    outcome: str = "unchanged"
    forgotten: dict[str, Any] = field(default_factory=dict)
    rendered: WriteRender | None = None  # the render after an edit that forgot nothing (a forget renders its own)
    erased_texts: list[str] = field(default_factory=list)  # every version its forgets erased, for the histories


def _edit(store: PersonaStore, base: EditBase, file: EditFile, editor: list[str], options: Options, *,
          quiet: bool) -> Result:
    """Open the editor until the file applies, the user leaves it unchanged, or the profile changed meanwhile."""
    from ..interchange.edit import apply_edit, plan_edit
    from ..interchange.edit_file import parse_edit, with_problems
    from ..schedule.history_journal import Recorder

    for _ in range(MAX_ROUNDS):
        saved = file.edit(editor)
        if saved == file.shown:
            if saved == file.original:
                return Result()
            raise EditError(f"nothing was applied: the editor closed with the problems unfixed{file.keep_note(saved)}")
        try:
            _abort_if_emptied(saved, file)
            plan = plan_edit(store, base, parse_edit(saved), forget=options.forget, force=options.force)
            if plan.empty or options.dry_run:
                return Result(plan, outcome="nothing to change" if plan.empty else "dry run")
            if not quiet:
                typer.echo(describe(plan))
            _confirm_removals(plan, options.yes, file, saved)
            recorder = Recorder(store, keep=False)
            applied = apply_edit(store, plan, force=options.force, journal=recorder)
            return Result(plan, applied, "applied", erased_texts=recorder.texts)
        except EditConflict as error:
            raise EditConflict(f"{error}{file.keep_note(saved)} (run `persona edit` again and carry it "
                               "across)") from None
        except EditError as error:
            if not error.problems:
                raise
            typer.echo(f"persona edit: {counted(len(error.problems), 'problem')}; reopening the file with them at "
                       "the top", err=True)
            file.show(with_problems(saved, error.problems))
    raise EditError(f"nothing was applied: the file still had problems after {MAX_ROUNDS} rounds in the editor"
                    f"{file.keep_note(file.read())}")


def _abort_if_emptied(saved: str, file: EditFile) -> None:
    """An emptied file is an abort, never "remove every fact" (EditError); a file that still holds something
    (entries under another key) is kept, an empty one is not."""
    from ..interchange.edit_file import EMPTY, abort_reason

    reason = abort_reason(saved)
    if reason is None:
        return
    file.dropped = reason == EMPTY
    note = "" if file.dropped else file.keep_note(saved)
    raise EditError(f"aborted: {reason}; nothing was applied{note} (as git takes an empty commit message)")


def _confirm_removals(plan: Plan, yes: bool, file: EditFile, saved: str) -> None:
    """An edit that removes more than half the profile's facts is asked about on a terminal and refused without
    one (EditError), unless ``yes``."""
    removed, total = plan.counts()["removed"], len(plan.base.facts)
    if yes or removed * 2 <= total:
        return
    what = f"this edit removes {removed} of the profile's {total} facts, more than half"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise EditError(f"{what}; nothing was applied{file.keep_note(saved)} (there is no terminal to confirm it on: "
                        "pass --yes to apply it)")
    if not typer.confirm(f"{what} ({'FORGOTTEN FOR REAL' if plan.forget else 'demoted'}): apply it?", err=True):
        raise EditError(f"{what}; you said no, so nothing was applied{file.keep_note(saved)}")


def _finish(settings: Settings, store: PersonaStore, result: Result, file: EditFile, as_json: bool) -> None:
    """Say how the edit ended, once the profile's files are rendered after it (after forgets, by the forget's own
    render), and what could not be rendered."""
    note = file.keep_note(file.read()) if result.outcome == "dry run" else ""
    if result.applied is not None and result.applied.erased:
        from ..schedule.forget import settle
        from ..schedule.history_journal import scrub_after

        done = settle(settings, store, result.applied.erased, editing=file.path)
        histories = scrub_after(store, result.erased_texts)
        result.forgotten = {"rendered": done.rendered, "still_holding": done.still_holding,
                            "in_users_text": done.in_users_text, "edit_files": done.edit_files,
                            "render_warnings": done.render_warnings, "host_histories": histories.to_dict()}
        warn_unfinished(done.still_holding, scrubbed=all(erasure.scrubbed for _, erasure in result.applied.erased),
                        in_users_text=done.in_users_text, render_warnings=done.render_warnings)
        warn_histories(histories)
    elif result.applied is not None:
        from ..schedule.after_write import render_after_write

        result.rendered = render_after_write(settings, store)
    if as_json:
        emit_json({"outcome": result.outcome, "plan": None if result.plan is None else result.plan.to_dict(),
                   "applied": None if result.applied is None else result.applied.to_dict(), **result.forgotten,
                   **(result.rendered.to_dict() if result.rendered is not None else {}),
                   **({"kept": str(file.path)} if file.kept else {})})
    else:
        _say(result, note)
    if result.rendered is not None:
        say_rendered(result.rendered, as_json=as_json)
    if result.forgotten and not result.forgotten["host_histories"]["complete"]:
        raise typer.Exit(1)  # a host's history still holds a forgotten text (each is named above)


def _say(result: Result, note: str) -> None:
    if result.outcome == "dry run" and result.plan is not None:
        typer.echo(describe(result.plan))
    typer.echo({"unchanged": "no change: the editor closed with the file as it was; nothing was applied",
                "nothing to change": "nothing to change: every fact is as it was",
                "dry run": f"dry run: nothing was applied{note}",
                "applied": "" if result.applied is None else applied_line(result.applied)}[result.outcome])
    if result.forgotten:
        typer.echo(f"{counted(len(result.forgotten['rendered']), 'target')} rendered again without the forgotten "
                   "text: it leaves every session's persona at the next request")
        say_edit_files(result.forgotten["edit_files"])
        if result.forgotten["host_histories"]["files"]:
            from ..schedule.host_histories import HostHistories

            say_histories(HostHistories(files=result.forgotten["host_histories"]["files"]))


# -- what the plan and the outcome say --------------------------------------------------------------------


def describe(plan: Plan) -> str:
    """The plan, one line per change, under its counts."""
    counts = plan.counts()
    lines = [f"profile {shown(plan.base.profile, 80)!r}: {counts['added']} added, {counts['changed']} changed, "
             f"{counts['removed']} removed"]
    if plan.of("forget"):
        lines.append("removed facts are FORGOTTEN FOR REAL: every copy of their text goes, and this cannot be undone")
    lines += [f"  {step.kind:<8} {_what(step)}" for step in plan.steps]
    return "\n".join(lines)


def _what(step: Step) -> str:
    if step.old is None and step.now is not None:
        return f"{_text(step.now.topic, step.now.content)} (line {step.line})"
    assert step.old is not None
    if step.now is None:
        return f"#{step.old.id} {_text(step.old.topic, step.old.content)}"
    if step.kind == "replace":
        return f"#{step.old.id} {_text(step.old.topic, step.old.content)} -> {_text(step.now.topic, step.now.content)}"
    was, now = step.was, step.now
    assert was is not None
    return f"#{step.old.id} " + ", ".join(f"{name} {shown(getattr(was, name), 40)} -> {shown(getattr(now, name), 40)}"
                                          for name in step.changed)


def _text(topic: str, content: str) -> str:
    return f"[{shown(topic, 30)}] {shown(content, TEXT_WIDTH)}"


def applied_line(applied: Applied) -> str:
    """What was done, in one line."""
    parts = [f"added {_ids(applied.added)}" if applied.added else "",
             *(f"#{new} replaces #{old} (`persona undo-replace {new}` takes it back)" for old, new in applied.replaced),
             f"updated {_ids(applied.updated)}" if applied.updated else "",
             f"demoted {_ids(applied.demoted)}" if applied.demoted else "",
             f"forgot {', '.join(version.label for _, erasure in applied.erased for version in erasure.versions)}"
             if applied.erased else ""]
    return "applied in one transaction: " + "; ".join(part for part in parts if part)


def _ids(ids: list[int]) -> str:
    return ", ".join(f"#{fact_id}" for fact_id in ids)
