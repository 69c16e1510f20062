"""Issue 50's first day: three overlapping imports of a realistic home, then the scan, scored on what it proposes.

A home folder holds what a new user brings: a mem0 export (``mem0.json``), Hermes' memory (``USER.md``) and an
instruction file (``CLAUDE.md``), written by someone who never read the rules, and ``expected.yaml``: the groups of
near-duplicates (each should end as one fact), the changes (an old fact a newer one makes untrue) and the facts
never to replace (a name). The three files are imported in that order through the CLI (``persona import``, a
process of its own, in a HOME of its own), then ``persona review --scan`` looks over the stored persona. Scored:

- a near-duplicate group is *proposed* when its facts are one fact (an import found it already there) or every
  one of them is joined to the others by a merge proposal;
- a change is *proposed* when an update proposal names the old fact and the new one;
- a fact never to replace is *kept* when no update proposal names it as the old fact;
- every other proposal is *wrong*: it joins two facts no group or change joins.

Each home is measured under every value of ``supersede.embeddings`` the benchmark can (``off``; ``auto`` when the
``embed`` extra is installed), with the wall time of its three imports and scan.
``python -m benchmarks.first_day [HOME_FOLDER ...]`` prints the figures and each miss.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from pipeline.text import normal_form

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
HOMES = (DATA / "blind" / "home", DATA / "blind2" / "home", DATA / "blind3" / "home")
IMPORTS = (("mem0.json", "mem0"), ("USER.md", "hermes"), ("CLAUDE.md", "instructions"))


@dataclass
class FirstDay:
    """One home's outcome: the ids each expected text became, and the proposals the imports and the scan made."""

    ids: dict[str, set[int]] = field(default_factory=dict)  # a text's normal form -> the stored facts it became
    proposals: list[dict[str, Any]] = field(default_factory=list)


EMBEDDINGS_ENV = "MNEMOSYNE_PERSONA_SUPERSEDE__EMBEDDINGS"


def persona(home: Path, database: Path, *args: str, embeddings: str = "off") -> Any:
    """``persona --db DATABASE ARGS --json`` in a HOME of its own, with supersede.embeddings ``embeddings``; its
    answer. OMP_NUM_THREADS passes through (the embedding model's threads)."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           EMBEDDINGS_ENV: embeddings}
    if "OMP_NUM_THREADS" in os.environ:
        env["OMP_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"]
    done = subprocess.run([sys.executable, "-m", "pipeline", "--db", str(database), *args, "--json"], env=env,
                          capture_output=True, text=True, check=False, cwd=home, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"persona {' '.join(args)} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)


def run_home(folder: Path, embeddings: str = "off") -> FirstDay:
    """Import the home's three files in order, then scan; what it became."""
    day = FirstDay()
    with tempfile.TemporaryDirectory() as tmp:
        home, database = Path(tmp) / "home", Path(tmp) / "m.db"
        home.mkdir()
        for name, kind in IMPORTS:
            answer = persona(home, database, "import", str(folder / name), "--from", kind, "--no-render",
                             embeddings=embeddings)
            for entry in answer.get("entries", []):
                if entry.get("id") is not None:
                    day.ids.setdefault(normal_form(str(entry["content"])), set()).add(int(entry["id"]))
            day.proposals += answer.get("proposals", [])
        # every open proposal, the scan's among them
        day.proposals += persona(home, database, "review", "--scan", embeddings=embeddings)
    return day


def _pair(proposal: dict[str, Any]) -> tuple[str, int, int]:
    return str(proposal["kind"]), int(proposal["old"]["id"]), int(proposal["new"]["id"])


def ids_of(day: FirstDay, text: str) -> set[int]:
    """The stored facts an expected text became: its own entry's, else an entry that holds it or that it holds."""
    form = normal_form(text)
    if form in day.ids:
        return day.ids[form]
    return {found for known, ids in day.ids.items() if form in known or known in form for found in ids}


def joined(ids: Iterable[int], merges: set[frozenset[int]]) -> bool:
    """Whether the facts ``ids`` are one, or each joined to every other by a merge proposal (directly or through
    another fact of the group)."""
    group = set(ids)
    if len(group) <= 1:
        return True
    reached, frontier = set(), [next(iter(group))]
    while frontier:
        at = frontier.pop()
        reached.add(at)
        frontier += [other for other in group - reached if frozenset((at, other)) in merges]
    return reached == group


def score(day: FirstDay, expected: dict[str, Any]) -> dict[str, Any]:
    """The home's figures: groups and changes proposed, names kept, wrong proposals, and each miss."""
    pairs = {_pair(proposal) for proposal in day.proposals}
    merges = {frozenset((old, new)) for kind, old, new in pairs if kind == "merge"}
    updates = {(old, new) for kind, old, new in pairs if kind == "update"}
    explained: set[frozenset[int]] = set()
    misses: list[str] = []
    groups = expected.get("near_duplicate_groups", [])
    found_groups = 0
    for group in groups:
        ids = set().union(*(ids_of(day, member["text"]) for member in group))
        explained |= {frozenset((a, b)) for a in ids for b in ids if a != b}
        if joined(ids, merges):
            found_groups += 1
        else:
            misses.append(f"group not merged: {' / '.join(member['text'] for member in group)}")
    changes = expected.get("changed", [])
    found_changes = 0
    for change in changes:
        olds, news = ids_of(day, change["old"]["text"]), ids_of(day, change["new"]["text"])
        explained |= {frozenset((a, b)) for a in olds for b in news}
        if any((old, new) in updates for old in olds for new in news):
            found_changes += 1
        else:
            misses.append(f"change not proposed: {change['old']['text']} -> {change['new']['text']}")
    names = set().union(*(ids_of(day, kept["text"]) for kept in expected.get("never_replace", [])))
    replaced = sum(old in names for old, _ in updates)
    wrong = [(kind, old, new) for kind, old, new in pairs
             if frozenset((old, new)) not in explained and not (kind == "merge" and {old, new} <= names)]
    return {"groups": (found_groups, len(groups)), "changes": (found_changes, len(changes)),
            "names_replaced": replaced, "wrong": len(wrong), "proposals": len(pairs), "misses": misses}


def figures(result: dict[str, Any]) -> str:
    groups, changes = result["groups"], result["changes"]
    return (f"near-duplicates merged {groups[0]}/{groups[1]}, changes proposed {changes[0]}/{changes[1]}, "
            f"wrong proposals {result['wrong']} of {result['proposals']}, names replaced {result['names_replaced']}")


def measure(folder: Path, embeddings: str = "off") -> dict[str, Any]:
    """The home's figures, and ``seconds``: the wall time of its imports and scan (four processes)."""
    expected = YAML(typ="safe").load((folder / "expected.yaml").read_text("utf-8"))
    start = time.perf_counter()
    day = run_home(folder, embeddings)
    return {**score(day, expected), "seconds": time.perf_counter() - start}


def rows() -> list[tuple[str, str, str]]:
    """The benchmark table's rows: one per home that is there and value of supersede.embeddings measured."""
    from .pairs import modes

    found = []
    for folder in (folder for folder in HOMES if (folder / "expected.yaml").is_file()):
        for mode in modes():
            result = measure(folder, mode)
            found.append((f"first day: 3 imports + scan, {folder.parent.name} home, embeddings {mode}",
                          "mem0.json, USER.md, CLAUDE.md", f"{figures(result)}; {result['seconds']:.1f} s"))
    return found


def main(argv: Sequence[str]) -> None:
    from .pairs import modes

    for folder in [Path(arg).resolve() for arg in argv] or [home for home in HOMES if home.is_dir()]:
        for mode in modes():
            result = measure(folder, mode)
            print(f"{folder}, embeddings {mode}: {figures(result)}; {result['seconds']:.1f} s")
            for miss in result["misses"]:
                print(f"  {miss}")


if __name__ == "__main__":
    main(sys.argv[1:])
