"""The held-out set of issue 50 is frozen: written by someone who never read the detector's rules, measured once
(`make bench`: its pairs and full topics), never tuned on. A change to any of its files fails here."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.pairs import BLIND, BLIND_TOPICS, LABELS, load

FOLDER = Path(__file__).parent / "data" / "blind"
FROZEN = {
    "pairs.yaml": "59d98f1eb151a06e97be6131823f6ebe940299cee1d9df630280859eb5b02f56",
    "topics.yaml": "f6219cb7204a7cb9f615bbf113d25d92e9c1c8df506b2003720be2e64be7463d",
    "home/CLAUDE.md": "5aeed7466c63799ceb5152477cc3a11009670b8a81d4d2e8239f799240fb402c",
    "home/USER.md": "4e87a94fc0181fa170ed5f730da5b021847b5f9b6cb01bf06d169a0141235946",
    "home/expected.yaml": "42ede39c1a1fefa9b82f8faac942047de49e337e886d43680b230238681d4b6f",
    "home/mem0.json": "8b4c71fab9cbef195cd06b02ef54fce2634c82f2523fa334053df95cc4709e77",
}


def test_every_file_of_the_blind_set_is_as_it_was_frozen() -> None:
    found = {str(path.relative_to(FOLDER)) for path in FOLDER.rglob("*") if path.is_file()}
    assert found == set(FROZEN)
    for name, digest in FROZEN.items():
        assert hashlib.sha256((FOLDER / name).read_bytes()).hexdigest() == digest, name


def test_the_benchmark_reads_the_blind_set_it_measures() -> None:
    pairs = load(BLIND)
    assert len(pairs) == 180 and {pair["label"] for pair in pairs} == set(LABELS)
    assert {pair["lang"] for pair in pairs} == {"en", "de", "fr", "es", "pt", "it"}
    assert BLIND_TOPICS.is_file() and BLIND.parent == FOLDER
