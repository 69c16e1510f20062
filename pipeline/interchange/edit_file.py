"""The file ``persona edit`` opens: the profile's facts in the export form, what cannot be edited as comments.

::

    # persona edit: profile 'alice', 2 facts, in /home/alice/.hermes/mnemosyne/data/mnemosyne.db
    # ... (what each kind of change does)
    facts:
    # #12: written by cli; created 2026-05-10 12:00:00; last reinforced 2026-05-11 09:30:00
    - id: 12
      key: package_manager
      topic: tools
      content: Uses pnpm for JavaScript projects
      tier: long_term
      confidence: 0.7
      reinforcement_count: 2

An entry is a :class:`~.fact_entry.FactEntry`; its ``id`` ties it to the fact
shown. When the file cannot be applied, it is shown again with the problems
above it (``# error: line 9: ...``, lines counted in the file as shown), and
every line the user typed stays. Those lines are comments, so the file is read
with them in place and every line number stays the user's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from ..errors import EditError
from ..fs.yaml import YamlTooComplex, check_yaml
from ..store import Fact, PersonaStore, profile_generation, supersede
from ..text import counted
from .export import dump_yaml, export_entry
from .fact_entry import FactEntry

Problem = tuple[int | None, str]  # (line, what is wrong); the line None where the whole file is meant
BANNER = "# persona edit could not apply this file: fix what each error names, then save (or quit to cancel)."
ERROR = "# error: "
EXAMPLE = "# - topic: style\n#   content: Answers tersely.\n"
GUIDE = """\
# Correct a fact's text, topic or scope: it is replaced (`persona undo-replace NEW_ID` takes it back).
# A scope is global (no scope line), `scope: {{project: PATH-or-URL}}` or `scope: {{host: NAME}}`.
# Change its tier, confidence, reinforcement_count, reason or key: it is updated in place.
# Delete its entry: {removed}.
# Add an entry without an id (topic and content; tier, confidence, reason, key if you like): a new fact.
# An entry that leaves out tier, confidence or reinforcement_count keeps the fact's own.
# Lines starting with # are not read. Save and quit to apply it all at once; quit without saving to change nothing.
"""
EMPTY = "the saved file is empty"  # or only comments and blank lines
DEMOTED = "the fact is demoted (`persona edit --forget` forgets it for real)"
FORGOTTEN = "the fact is FORGOTTEN FOR REAL (every copy of its text; this cannot be undone)"


@dataclass(frozen=True)
class EditBase:
    """What the editor was opened on: the profile's change counter, and its facts (and their keys) as shown."""

    profile: str
    generation: int
    facts: dict[int, Fact]
    keys: dict[int, str]


@dataclass(frozen=True)
class Edited:
    """One entry of the saved file: the line it starts on, the entry, and the fields it gave."""

    line: int
    entry: FactEntry
    given: frozenset[str]


def read_base(store: PersonaStore) -> EditBase:
    """The profile's facts and change counter, read in one snapshot."""
    with store.snapshot() as conn:
        generation = profile_generation(conn, store.profile)
        keys = supersede.keys_of(conn, store.profile)
        facts = {fact.id: fact for fact in store.list()}
    return EditBase(store.profile, generation, facts, {fact_id: key for fact_id, key in keys.items()
                                                       if fact_id in facts})


def edit_text(base: EditBase, database: str, *, forget: bool = False) -> str:
    """The file the editor opens."""
    head = (f"# persona edit: profile {flat(repr(base.profile))}, {counted(len(base.facts), 'fact')}, "
            f"in {flat(database)}\n" + GUIDE.format(removed=FORGOTTEN if forget else DEMOTED))
    if not base.facts:
        return f"{head}facts:\n{EXAMPLE}"
    return head + "facts:\n" + "".join(_entry(fact, base.keys.get(fact.id)) for fact in base.facts.values())


def _entry(fact: Fact, key: str | None) -> str:
    fields = export_entry(fact, key)
    writer = fields.pop("writer", None) or "unknown"
    shown = {name: value for name, value in fields.items() if value is not None}
    return (f"# #{fact.id}: written by {flat(writer)}; created {flat(fact.created_at)}; "
            f"last reinforced {flat(fact.last_reinforced_at)}\n" + dump_yaml([shown]))


def flat(text: object) -> str:
    """Text on one line, fit for a comment."""
    return " ".join(str(text).split())


# -- the problems, shown above the user's text ---------------------------------------------------------


def with_problems(saved: str, problems: list[Problem]) -> str:
    """The saved text with the problems above it (in place of any shown before), each line number counted in the
    file as it is shown now; every line the user typed stays."""
    lines = saved.splitlines(keepends=True)
    before = 0
    while before < len(lines) and (lines[before].rstrip("\r\n") == BANNER or lines[before].startswith(ERROR)):
        before += 1
    shift = 1 + len(problems) - before
    above = [BANNER] + [ERROR + (f"line {line + shift}: " if line else "") + flat(what) for line, what in problems]
    return "\n".join(above) + "\n" + "".join(lines[before:])


def refused(problems: list[Problem]) -> EditError:
    """One error naming every problem, each with its line."""
    shown = "; ".join((f"line {line}: " if line else "") + what for line, what in problems)
    return EditError(f"{counted(len(problems), 'problem')} in the edited file: {shown}", problems)


# -- reading the saved file ---------------------------------------------------------------------------


def parse_edit(text: str) -> list[Edited]:
    """The saved file's entries; an :class:`EditError` naming every bad one, each with its line."""
    items = _items(_load(text))
    edited: list[Edited] = []
    problems: list[Problem] = []
    for index, item in enumerate(items):
        line = items.lc.item(index)[0] + 1 if isinstance(items, CommentedSeq) else 1
        if not isinstance(item, dict):
            problems.append((line, "expected a mapping with topic and content"))
            continue
        try:
            entry = FactEntry.model_validate(dict(item))
        except ValidationError as error:
            problems += [_problem(item, line, detail) for detail in error.errors()]
            continue
        edited.append(Edited(line, entry, frozenset(entry.model_fields_set)))
    if problems:
        raise refused(problems)
    return edited


def abort_reason(text: str) -> str | None:
    """Why a saved file means "abort, change nothing", as git takes an empty commit message: it is empty (or only
    comments and blank lines), or it holds no ``facts:`` (what an editor that crashed, a full disk or a write of an
    unloaded buffer leaves); None for an edit. Bad YAML is an edit, with a problem to fix."""
    document = _load(text)
    if document is None:
        return EMPTY
    if isinstance(document, CommentedMap) and "facts" not in document:
        return "the saved file holds no `facts:`"
    return None


def _load(text: str) -> Any:
    """The document, within the limits every YAML reader of ours keeps; a syntax error names its line."""
    try:
        check_yaml(text)
        return YAML(typ="rt").load(text)
    except YamlTooComplex as error:
        raise refused([(None, str(error))]) from None
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        last = max(1, len(text.splitlines()))  # the end of the text is its last line, not the one after it
        raise refused([(min(mark.line + 1, last) if mark else None,
                        f"bad YAML: {error.problem or error.context}")]) from None
    except YAMLError as error:
        raise refused([(None, f"bad YAML: {flat(error)}")]) from None


def _items(document: Any) -> list[Any]:
    if isinstance(document, CommentedMap):
        document = document.get("facts")
    if document is None:
        return []
    if not isinstance(document, list):
        raise refused([(1, "expected `facts:` and a list of facts under it")])
    return document


def _problem(item: Any, line: int, detail: Any) -> Problem:
    field = str(detail["loc"][0]) if detail["loc"] else None
    if field is not None and isinstance(item, CommentedMap) and field in item:
        line = item.lc.key(field)[0] + 1
    if detail["type"] == "extra_forbidden":
        return line, f"{field}: not a field of a fact (those are {', '.join(FactEntry.model_fields)})"
    message = str(detail["msg"]).removeprefix("Value error, ")
    return line, (f"{field}: " if field else "") + message[:1].lower() + message[1:]
