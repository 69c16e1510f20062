"""A profile's checked rows kept between renders while its change counter says they are unchanged (#40), and what
rank derives from them alone.

extract keeps them (:func:`pipeline.stages.extract.extract`) and names them in the run's context; rank uses what
it derived from them only when the facts it ranks are the very facts they gave at this moment (the same objects:
no stage between changed one), so whatever is derived here depends on nothing a render could change but the age.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..render.model import PersonaFact

KEPT_ROWS = "kept rows"  # the run context's cache entry: the KeptRows this run's facts came from


@dataclass(slots=True)
class KeptRows:
    """A profile's checked rows, each with its age base where its age goes (infinite for no timestamp), the facts
    they made at the last moment they were aged at (a julianday), and what stages derived from the rows alone."""

    rows: tuple[tuple[Any, ...], ...]  # in id order, as the profile's read gives them
    whole: bool = False  # every row read kept the contract: only such rows are patched (:meth:`patched`)
    last: tuple[float, list[PersonaFact]] | None = None
    derived: dict[Hashable, Any] = field(default_factory=dict)
    renders: int = 0  # how many renders these rows gave facts to
    # The rows these were patched from, and which places changed, when no row came or went: a stage may derive
    # what it derived from those anew only where they changed (rank's first use drops the link).
    parent: KeptRows | None = None
    updated: tuple[int, ...] = ()

    def aged(self, moment: float) -> list[PersonaFact]:
        """The facts at ``moment``: each age as SQLite gives it, ``MAX(0.0, moment - base)``, 0 for no timestamp."""
        self.renders += 1
        last = self.last
        if last is None or last[0] != moment:
            make = tuple.__new__
            last = self.last = (moment, [make(PersonaFact, (key, tier, topic, content, confidence, count,
                                                           moment - base if base < moment else 0.0, origin, scope,
                                                           slot))
                                         for key, tier, topic, content, confidence, count, base, origin, scope, slot
                                         in self.rows])
        return list(last[1])

    def made(self, facts: Sequence[PersonaFact]) -> bool:
        """Whether ``facts`` are the facts these rows made last, the same objects in the same order, and the rows
        gave facts before: what is derived from rows only pays once they are used again (after an edit each
        render's rows are new)."""
        last = self.last
        return ((self.renders > 1 or self.parent is not None) and last is not None and len(facts) == len(last[1])
                and all(map(operator.is_, facts, last[1])))

    def patched(self, changes: Sequence[tuple[int, str, tuple[Any, ...] | None]]) -> KeptRows | None:
        """These rows with ``changes`` made (``(id, key, checked row or None for gone)`` by id: the facts changed
        since they were read), in the order a read gives (by id); None where a read is needed instead: a new fact
        whose id falls between the rows', or more changes than a read of them all costs."""
        if not self.whole or 4 * len(changes) > len(self.rows) + 4:
            return None
        rows = list(self.rows)
        at = {row[0]: index for index, row in enumerate(rows)}
        last = int(rows[-1][0][2:]) if rows else None
        gone: set[int] = set()
        added: list[tuple[Any, ...]] = []
        for persona_id, key, row in changes:
            index = at.get(key)
            if index is not None:
                if row is None:
                    gone.add(index)
                else:
                    rows[index] = row
            elif row is not None:
                if last is not None and persona_id <= last:
                    return None
                added.append(row)
        if gone or added:
            kept = [row for index, row in enumerate(rows) if index not in gone] if gone else rows
            return KeptRows((*kept, *added), whole=True)
        self.parent = None  # one link at most: what is kept never holds a chain of earlier rows
        updated = tuple(at[key] for _, key, row in changes if key in at)
        return KeptRows(tuple(rows), whole=True, parent=self, updated=updated)
