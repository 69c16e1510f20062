"""The supersession detector's precision and recall on tests/data/supersede_pairs.yaml.

The detector is pipeline/store/supersede_rules.py.
"""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from pipeline.store.supersede_rules import judge

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "supersede_pairs.yaml"


def detector_figures() -> tuple[int, float, float, int]:
    """(pairs, precision, recall, hard negatives wrongly superseded) over the whole corpus."""
    pairs = YAML(typ="safe").load(CORPUS.read_text(encoding="utf-8"))["pairs"]
    judged = [(judge(pair["old"], pair["new"]).supersedes, bool(pair["supersedes"])) for pair in pairs]
    hits = sum(said and truth for said, truth in judged)
    said = sum(said for said, _ in judged)
    true = sum(truth for _, truth in judged)
    wrong = sum(said and not truth for said, truth in judged)
    return len(pairs), hits / said if said else 1.0, hits / true if true else 1.0, wrong
