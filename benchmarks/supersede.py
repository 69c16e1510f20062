"""The proposal detector's figures: precision and recall on the train and held-out corpora, and noise.

The detector is pipeline/store/supersede_rules.py. ``train`` is what its rules were written against;
``heldout`` was frozen before (tests/store/test_corpus.py pins its hash), so it is the honest measure. Noise is
proposals per 1,000 writes of facts that are all true at once (tests/data/supersede_noise.yaml), each with a change
word in front. With PERSONA_PREFEVAL_DIR naming a copy of PrefEval's benchmark_dataset/explicit_preference folder
(amazon-science/PrefEval; not shipped: CC BY-NC), its 1,000 explicit preferences are measured the same way.

``python -m benchmarks.supersede`` prints the table and every train pair the detector gets wrong.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from pipeline import PersonaStore
from pipeline.store.supersede_rules import Verdict, judge

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
PARTS = ("train", "heldout")
PREFEVAL_PREFIXES = ("Now, ", "Actually, ", "These days, ")
Rule = Callable[[Verdict], bool]
# Other facts of a topic, written between a pair's two facts in the store's figure: they share no content stem
# with the corpora's pairs, so only recency brings an old fact that shares none with its change.
BETWEEN = ("Keeps notes in plain text files.", "Reads the changelog before upgrading.", "Likes short commit messages.",
           "Reviews pull requests in the morning.", "Prefers dark themes everywhere.", "Writes tests before fixes.",
           "Uses two monitors at the desk.", "Takes a walk after lunch.", "Backs up the laptop every Sunday.",
           "Turns notifications off while focusing.", "Names branches after the issue number.",
           "Keeps the inbox at zero.", "Drinks water from a steel bottle.", "Listens to jazz while coding.",
           "Plans the week on Monday morning.", "Avoids meetings before ten.", "Labels every cable at home.",
           "Answers chat messages in batches.", "Archives old projects yearly.", "Prints nothing on paper.")


def proposes(verdict: Verdict) -> bool:
    return verdict.proposes


def explicit(verdict: Verdict) -> bool:
    return verdict.explicit


@dataclass(frozen=True)
class Figures:
    """One rule's figures on one corpus part."""

    pairs: int
    changes: int
    said: int
    right: int

    @property
    def precision(self) -> float:
        return self.right / self.said if self.said else 1.0

    @property
    def recall(self) -> float:
        return self.right / self.changes if self.changes else 1.0

    @property
    def wrong(self) -> int:
        """Hard negatives (label keep) the rule would propose or supersede."""
        return self.said - self.right

    @property
    def precision_floor(self) -> float:
        """The lower end of precision's 95% Wilson interval: what ``right`` of ``said`` can show."""
        return wilson_floor(self.right, self.said)

    def __str__(self) -> str:
        return (f"precision {self.precision:.3f} ({self.right}/{self.said}, 95% floor {self.precision_floor:.2f}), "
                f"recall {self.recall:.3f} ({self.right}/{self.changes})")


def wilson_floor(right: int, total: int, z: float = 1.96) -> float:
    if total == 0:
        return 0.0
    share = right / total
    centre = share + z * z / (2 * total)
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    return (centre - spread) / (1 + z * z / total)


def pairs(part: str) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = YAML(typ="safe").load((DATA / f"supersede_{part}.yaml").read_text("utf-8"))["pairs"]
    return loaded


def figures(part: str, rule: Rule = proposes) -> Figures:
    found = pairs(part)
    judged = [(rule(judge(pair["old"], pair["new"])), pair["label"] == "change") for pair in found]
    return Figures(len(found), sum(truth for _, truth in judged), sum(said for said, _ in judged),
                   sum(said and truth for said, truth in judged))


def rates(part: str) -> str:
    """Issue 38's goals: recall of update proposals on real changes, and false proposals (an update, or a merge
    of two facts that do not say the same) among pairs that are both true; merges found among near-duplicates."""
    found = pairs(part)
    changes = [pair for pair in found if pair["label"] == "change"]
    keeps = [pair for pair in found if pair["label"] == "keep"]
    merges = [pair for pair in found if pair["label"] == "merge"]
    said = sum(judge(pair["old"], pair["new"]).update for pair in changes)
    wrong = sum(_false(pair) for pair in keeps)
    merged = sum(judge(pair["old"], pair["new"]).merge for pair in merges)
    shown = f"recall {said / len(changes):.3f} ({said}/{len(changes)}), false {wrong / len(keeps):.3f} " \
            f"({wrong}/{len(keeps)})"
    return shown + (f", merges {merged}/{len(merges)}" if merges else "")


def _false(pair: dict[str, Any]) -> bool:
    verdict = judge(pair["old"], pair["new"])
    return verdict.update or (verdict.merge and pair["kind"] not in ("same_value", "refinement"))


def noise_rate() -> tuple[int, int]:
    """(writes, proposals) over the noise set, every topic under every prefix of its language."""
    noise = YAML(typ="safe").load((DATA / "supersede_noise.yaml").read_text("utf-8"))
    runs = [(prefix, topic["facts"]) for topic in noise["topics"] for prefix in noise["prefixes"][topic["lang"]]]
    return _proposals(runs)


def prefeval_rate(folder: Path) -> tuple[int, int]:
    """(writes, proposals) over PrefEval's explicit preferences, one topic per file, under three prefixes."""
    topics = [[item["preference"] for item in json.loads(path.read_text("utf-8"))]
              for path in sorted(folder.glob("*.json"))]
    return _proposals([(prefix, facts) for prefix in PREFEVAL_PREFIXES for facts in topics])


def _proposals(runs: Iterable[tuple[str, list[str]]]) -> tuple[int, int]:
    writes = proposals = 0
    for prefix, facts in runs:
        written: list[str] = []
        for fact in facts:
            new = prefix + (fact if fact.startswith("I ") else fact[:1].lower() + fact[1:])
            proposals += sum(judge(old, new).proposes for old in written)
            writes += 1
            written.append(new)
    return writes, proposals


def rows() -> list[tuple[str, str, str]]:
    """The benchmark table's rows: (what, corpus, figures)."""
    found = []
    for part in PARTS:
        sized = figures(part)
        found.append((f"supersede proposals, {part}", f"{sized.pairs} pairs", str(sized)))
        auto = figures(part, explicit)
        found.append((f"supersede explicit rule, {part}", f"{sized.pairs} pairs",
                      f"{auto}; {auto.wrong} hard negatives"))
    for part in ("train", "heldout", "spoken"):
        found.append((f"supersede update proposals, {part}", f"{len(pairs(part))} pairs", rates(part)))
    for between in (0, 11, len(BETWEEN)):
        said, total = store_recall(between)
        found.append((f"supersede through the store, {between} facts between", f"{total} changes, 3 parts",
                      f"recall {said / total:.3f} ({said}/{total})"))
    writes, said = noise_rate()
    found.append(("supersede proposals per 1,000 unrelated writes", f"{writes} writes, 6 languages",
                  f"{1000 * said / writes:.0f} ({said} proposals)"))
    folder = os.environ.get("PERSONA_PREFEVAL_DIR")
    if folder:
        writes, said = prefeval_rate(Path(folder))
        found.append(("supersede proposals per 1,000 PrefEval writes", f"{writes} writes",
                      f"{1000 * said / writes:.0f} ({said} proposals)"))
    return found


def store_recall(between: int) -> tuple[int, int]:
    """(changes proposed, changes) when each pair's two facts go through a store with ``between`` other facts of
    their topic written after the old one: the judge's recall, less what the bounded candidates leave unjudged."""
    changes = [pair for part in ("train", "heldout", "spoken") for pair in pairs(part) if pair["label"] == "change"]
    said = 0
    with tempfile.TemporaryDirectory() as tmp:
        for number, pair in enumerate(changes):  # a profile each: a text two pairs share is one fact in one profile
            with PersonaStore(Path(tmp) / "m.db", profile=f"pair-{number}") as store:
                topic = pair["topic"]
                old = store.add(pair["old"], topic=topic).fact
                for other in BETWEEN[:between]:
                    store.add(other, topic=topic)
                made = store.add(pair["new"], topic=topic).proposals
            said += any(proposal.kind == "update" and proposal.old.id == old.id for proposal in made)
    return said, len(changes)


def _misses(part: str) -> None:
    for pair in pairs(part):
        verdict = judge(pair["old"], pair["new"])
        if verdict.proposes != (pair["label"] == "change"):
            print(f"  {pair['label']:6} {pair['kind']:12} {verdict.rule or '-':10} {pair['old']!r} -> {pair['new']!r}")


if __name__ == "__main__":
    for what, corpus, shown in rows():
        print(f"{what:50} {corpus:28} {shown}")
    print("\ntrain pairs judged wrong (label, kind, rule, old -> new):")
    _misses("train")
