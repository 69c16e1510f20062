"""Issue 50's pair figures: change recall, false proposals on compatible pairs, merges found, look-alikes proposed.

Each pair goes through a store as a writer would send it (``PersonaStore.add`` of the old fact, then the new one,
under one topic of its own) and is scored on the proposals the second write returns:

- ``change``: an update proposal naming the old fact (recall);
- ``keep``: any proposal at all is a false one;
- ``merge``: a merge proposal of the two;
- ``lookalike``: any proposal at all is a false one.

Files: a YAML list of ``{id, lang, old, new, label}`` (label: change, keep, merge or lookalike).
tests/data/dev_pairs.yaml is the development set the detector was tuned on; tests/data/blind/ and tests/data/blind2/
were held out, each written by someone who never read the rules and frozen by hash (tests/test_blind_set.py): each
was measured once untuned, and both have been tuned on since issue 50's second pass (their pairs and their
full-topic scenarios, topics.yaml), so they are development sets now; the third, tests/data/blind3/, written
before that pass and measured once at its end, is the honest measure: never tune on it.
Every figure is printed twice: with ``supersede.embeddings: off`` (the word rules alone) and, when the ``embed``
extra is installed, ``auto`` (closeness in meaning, :mod:`pipeline.store.meaning`).
``python -m benchmarks.pairs [FILE]`` prints the figures and every pair judged wrong.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml import YAML

from pipeline import PersonaStore

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
DEV, BLIND = DATA / "dev_pairs.yaml", DATA / "blind" / "pairs.yaml"
PARAPHRASES = DATA / "dev_paraphrase_pairs.yaml"  # merges in other words, look-alikes a qualifier sets apart
DEV_TOPICS = DATA / "dev_topics.yaml"  # the same shape as the held-out scenarios, written for task 50: tuned on
BLIND_TOPICS = DATA / "blind" / "topics.yaml"  # scenarios: {name, facts: [{topic, text}], changes: [{new, old_index}]}
BLIND2 = DATA / "blind2"  # a second held-out set, written later by another writer who never read the rules
BLIND3 = DATA / "blind3"  # the third, written before the second pass and measured once at its end: never tuned on
LABELS = ("change", "keep", "merge", "lookalike")
Mode = Literal["auto", "off"]  # supersede.embeddings


@dataclass
class Scores:
    """How many pairs of each label, how many scored right, and the wrong ones (id, label, what was proposed)."""

    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LABELS, 0))
    hits: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LABELS, 0))
    wrong: list[tuple[str, str, str]] = field(default_factory=list)

    def share(self, label: str) -> str:
        total = self.total[label]
        return f"{self.hits[label] / total:.3f} ({self.hits[label]}/{total})" if total else "- (0 pairs)"


def load(path: Path) -> list[dict[str, Any]]:
    """The pairs of ``path``: a YAML list, or a mapping whose ``pairs`` is one; each needs old, new and label."""
    loaded = YAML(typ="safe").load(path.read_text("utf-8"))
    found = loaded.get("pairs", []) if isinstance(loaded, dict) else loaded or []
    bad = [str(pair.get("id", number)) for number, pair in enumerate(found)
           if not isinstance(pair, dict) or pair.get("label") not in LABELS
           or not pair.get("old") or not pair.get("new")]
    if bad:
        raise ValueError(f"{path}: pairs {', '.join(bad[:5])} lack old, new or a label in {', '.join(LABELS)}")
    return list(found)


def modes() -> tuple[Mode, ...]:
    """The values of supersede.embeddings measured: off always, auto when the extra is installed."""
    from pipeline.store.meaning import installed

    return ("off", "auto") if installed() else ("off",)


def score(found: Sequence[dict[str, Any]], embeddings: Mode = "off") -> Scores:
    """Each pair in a profile of its own (a text two pairs share is one fact in one profile) of one store."""
    scores = Scores()
    with tempfile.TemporaryDirectory() as tmp:
        for number, pair in enumerate(found):
            with PersonaStore(Path(tmp) / "m.db", profile=f"pair-{number}", supersede_embeddings=embeddings) as store:
                old = store.add(str(pair["old"]), topic="pair").fact
                made = store.add(str(pair["new"]), topic="pair").proposals
            label = str(pair["label"])
            named = [proposal for proposal in made if old.id in (proposal.old.id, proposal.new.id)]
            hit = {"change": any(proposal.kind == "update" and proposal.old.id == old.id for proposal in named),
                   "merge": any(proposal.kind == "merge" for proposal in named)}.get(label, not made)
            scores.total[label] += 1
            scores.hits[label] += hit
            if not hit:
                said = ", ".join(f"{proposal.kind}:{proposal.rule}" for proposal in made) or "nothing"
                scores.wrong.append((str(pair.get("id", number)), label, said))
    return scores


def figures(scores: Scores) -> str:
    """The four figures, as the issue states its goals (recall and merges high, the false shares low)."""
    false = {label: scores.total[label] - scores.hits[label] for label in ("keep", "lookalike")}
    shown = {label: (f"{false[label] / scores.total[label]:.3f} ({false[label]}/{scores.total[label]})"
                     if scores.total[label] else "- (0 pairs)") for label in false}
    return (f"change recall {scores.share('change')}, false proposals on keep {shown['keep']}, "
            f"merges found {scores.share('merge')}, look-alikes proposed {shown['lookalike']}")


# A full topic (issue 50): topic -> (the old fact, the facts written after it, its change). tests/store/
# test_full_topic.py writes the same store through both backends.
FULL_TOPICS = {
    "tools": ("Uses pip to install Python packages.",
              ["Uses Neovim as the main editor.", "Uses ruff for linting.", "Uses pytest for tests.",
               "Keeps dotfiles in a git repo.", "Uses tmux for terminal sessions.", "Runs mypy in strict mode."],
              "Switched to uv; doesn't use pip anymore."),
    "work": ("Works at Globex as a backend engineer.",
             ["Reviews pull requests in the morning.", "Prefers async standups.", "Writes design docs before coding.",
              "Pairs with juniors on Fridays.", "Keeps meetings under thirty minutes."],
             "Left Globex; now works at Initech."),
    "home": ("Lives in Lisbon.",
             ["Has a cat named Miso.", "Cycles to the office.", "Grows tomatoes on the balcony.",
              "Likes quiet cafes to work from.", "Goes hiking on weekends.", "Has a standing desk at home.",
              "Reads before bed."],
             "Moved to Porto last month."),
    "food": ("Is vegetarian.",
             ["Loves spicy food.", "Drinks oat milk.", "Is allergic to peanuts.", "Cooks pasta on Sundays.",
              "Avoids sugary snacks."],
             "Started eating meat again."),
    "schedule": ("The team standup is at 9:30.",
                 ["Blocks focus time after lunch.", "Takes Fridays off every other week.", "Answers email twice a day.",
                  "Plans the week on Monday morning.", "Does code review after standup."],
                 "The team standup moved to 10:00."),
}


def full_topic(embeddings: Mode = "off") -> str:
    """The changes found, the precision of the update proposals, and how often the old fact is in view."""
    found = right = said = in_view = 0
    with tempfile.TemporaryDirectory() as tmp, PersonaStore(Path(tmp) / "m.db", supersede_embeddings=embeddings) \
            as store:
        for topic, (old, between, new) in FULL_TOPICS.items():
            first = store.add(old, topic=topic).fact
            for fact in between:
                store.add(fact, topic=topic)
            written = store.add(new, topic=topic)
            updates = [proposal for proposal in written.proposals if proposal.kind == "update"]
            said += len(updates)
            right += sum(proposal.old.id == first.id for proposal in updates)
            found += any(proposal.old.id == first.id for proposal in updates)
            in_view += any(fact.id == first.id for fact in written.related)
    return (f"{found}/{len(FULL_TOPICS)} changes found, precision {right / said if said else 1.0:.2f} "
            f"({right}/{said}), old fact in related {in_view}/{len(FULL_TOPICS)}")


def topic_scores(path: Path, embeddings: Mode = "off") -> tuple[int, int, int, int, int]:
    """(changes found, changes, right update proposals, update proposals, old facts in related) of the full-topic
    scenarios of ``path``: each scenario's facts written in order into a store of its own, then each change under
    its old fact's topic."""
    found = right = said = in_view = changes = 0
    for scenario in YAML(typ="safe").load(path.read_text("utf-8")):
        with tempfile.TemporaryDirectory() as tmp, \
                PersonaStore(Path(tmp) / "m.db", supersede_embeddings=embeddings) as store:
            ids = [store.add(str(fact["text"]), topic=str(fact["topic"])).fact.id for fact in scenario["facts"]]
            for change in scenario["changes"]:
                old = scenario["facts"][change["old_index"]]
                written = store.add(str(change["new"]), topic=str(old["topic"]))
                updates = [proposal for proposal in written.proposals if proposal.kind == "update"]
                target = ids[change["old_index"]]
                changes += 1
                said += len(updates)
                right += sum(proposal.old.id == target for proposal in updates)
                found += any(proposal.old.id == target for proposal in updates)
                in_view += any(fact.id == target for fact in written.related)
    return found, changes, right, said, in_view


def blind_topics(path: Path = BLIND_TOPICS, embeddings: Mode = "off") -> str:
    """The full topics of ``path`` (the held-out ones by default), scored as :func:`full_topic` is."""
    found, changes, right, said, in_view = topic_scores(path, embeddings)
    return (f"{found}/{changes} changes found, precision {right / said if said else 1.0:.2f} ({right}/{said}), "
            f"old fact in related {in_view}/{changes}")


def rows() -> list[tuple[str, str, str]]:
    """The benchmark table's rows: the development sets, the once held-out sets, the full topics; each under every
    value of supersede.embeddings measured (:func:`modes`)."""
    found: list[tuple[str, str, str]] = []
    for mode in modes():
        tag = f", embeddings {mode}"
        found.append((f"proposals in full topics{tag}", f"{sum(len(b) + 2 for _, b, _ in FULL_TOPICS.values())} "
                      f"facts, {len(FULL_TOPICS)} topics", full_topic(mode)))
        for name, path in (("dev", DEV), ("dev paraphrases", PARAPHRASES), ("blind", BLIND),
                           ("blind2", BLIND2 / "pairs.yaml"), ("blind3 (held out)", BLIND3 / "pairs.yaml")):
            if path.is_file():
                pairs = load(path)
                found.append((f"proposals on pairs, {name} set{tag}", f"{len(pairs)} pairs, {path.name}",
                              figures(score(pairs, mode))))
            else:
                where = path.relative_to(DATA.parent.parent)
                found.append((f"proposals on pairs, {name} set{tag}", "absent", f"no file at {where}"))
        found.append((f"proposals in full topics, dev scenarios{tag}", DEV_TOPICS.name, blind_topics(DEV_TOPICS, mode)))
        for name, path in (("blind", BLIND_TOPICS), ("blind2", BLIND2 / "topics.yaml"),
                           ("blind3 (held out)", BLIND3 / "topics.yaml")):
            if path.is_file():
                found.append((f"proposals in full topics, {name} set{tag}", path.name, blind_topics(path, mode)))
    return found


def main(argv: Sequence[str]) -> None:
    path = Path(argv[0]) if argv else DEV
    pairs = load(path)
    for mode in modes():
        scores = score(pairs, mode)
        print(f"{path}, embeddings {mode}: {len(pairs)} pairs: {figures(scores)}")
        _wrong(pairs, scores)


def _wrong(pairs: list[dict[str, Any]], scores: Scores) -> None:
    by_id = {str(pair.get("id", number)): pair for number, pair in enumerate(pairs)}
    for pair_id, label, said in scores.wrong:
        pair = by_id[pair_id]
        print(f"  {pair_id:6} {label:9} proposed {said:24} {pair['old']!r} -> {pair['new']!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
