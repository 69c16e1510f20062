"""A proposal rule's verdict on a pair of facts (:mod:`.supersede_rules`): whether, how strongly, by which rule."""

from __future__ import annotations

from dataclasses import dataclass

EXPLICIT = frozenset({"from_to", "instead_of", "past", "stopped", "left_behind"})
UPDATE, MERGE = "update", "merge"  # what accepting does: the new fact replaces the old / the fuller one is kept


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a new fact may update an old one, how strongly (more shared words: a closer match), and by which
    rule ("" when none)."""

    proposes: bool
    strength: int = 0
    rule: str = ""
    kind: str = UPDATE

    @property
    def explicit(self) -> bool:
        """The new fact named the old value as no longer true (the strongest evidence a word rule has)."""
        return self.proposes and self.rule in EXPLICIT

    @property
    def update(self) -> bool:
        """A proposal that the new fact replaces the old one (not a merge of two that say the same)."""
        return self.proposes and self.kind == UPDATE

    @property
    def strong(self) -> bool:
        """Named by what the new fact says of the old value or its slot, or by their shared frame: more than a
        change word and the same topic (the "signal" rule)."""
        return self.proposes and self.rule != "signal"

    @property
    def named(self) -> bool:
        """The old value named as left behind, another value given to its slot, or a merge: what facts told at
        once (one import) may say of each other; a frame or a change word alone is too little there."""
        return self.proposes and (self.rule in EXPLICIT or self.rule.startswith("slot:") or self.kind == MERGE)

    @property
    def merge(self) -> bool:
        return self.proposes and self.kind == MERGE
