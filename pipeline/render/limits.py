"""Limits in the host's own unit: one count that fits the token budget and every host limit at once.

A host cuts in its own unit (Windsurf at 6,000 characters a rules file, Codex at 32 KiB of its whole chain,
Claude Code's hook at 10,000 characters). The cap stays one cap: it is given a counter that measures text
in the budget's tokens *and* in each limit's unit, each scaled so that the limit lands on the budget, and
reports the largest. A text fits the budget under that counter exactly when it fits every limit:
``ceil(used * budget / amount) <= budget`` holds just when ``used <= amount``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .tokens import TokenCounter

if TYPE_CHECKING:
    from ..config.sections import HostLimit, LimitUnit


def measure(text: str, unit: LimitUnit, counter: TokenCounter, *, bound: bool = False) -> int:
    """``text``'s size in ``unit``: tokens under ``counter`` (with ``bound``, its upper bound), Unicode
    characters, or UTF-8 bytes."""
    if unit == "chars":
        return len(text)
    if unit == "bytes":
        return len(text.encode("utf-8", "surrogatepass"))
    return counter.bound(text) if bound else counter.count(text)


class LimitedCounter:
    """``counter``'s tokens, or a limit's units scaled onto ``budget``, whichever is larger.

    ``overhead`` is text the host reads beside ours in the same unit (a region's markers, a hook's header):
    it comes off each limit, so the count of our text alone decides.
    """

    def __init__(self, counter: TokenCounter, budget: int, limits: tuple[HostLimit, ...], overhead: str) -> None:
        self.counter, self.budget, self.limits, self.overhead = counter, budget, limits, overhead
        # Memos of counts key on the name: every parameter that changes a count is in it.
        units = ",".join(f"{limit.amount}{limit.unit}" for limit in limits)
        self.name = f"{counter.name}|{budget}|{units}|{overhead!r}"

    def count(self, text: str) -> int:
        tokens = self.counter.count(text)
        return max([tokens, *(self._scaled(text, limit) for limit in self.limits)]) if text else tokens

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]

    def bound(self, text: str) -> int:
        # The text's bound over the overhead's own: the room left is never overstated, nor the text's share of it.
        tokens = self.counter.bound(text)
        return max([tokens, *(self._scaled(text, limit, bound=True) for limit in self.limits)]) if text else tokens

    def _scaled(self, text: str, limit: HostLimit, *, bound: bool = False) -> int:
        room = limit.amount - measure(self.overhead, limit.unit, self.counter, bound=bound)
        if room <= 0:
            return self.budget + 1
        return math.ceil(measure(text, limit.unit, self.counter, bound=bound) * self.budget / room)


def limited(counter: TokenCounter, budget: int, limits: Sequence[HostLimit], overhead: str = "") -> TokenCounter:
    """The counter the cap uses for a target with ``limits`` (``counter`` itself when there are none)."""
    return LimitedCounter(counter, budget, tuple(limits), overhead) if limits else counter


def over(text: str, limits: Sequence[HostLimit], counter: TokenCounter) -> list[tuple[HostLimit, int]]:
    """Each limit ``text`` goes past, with its size in that limit's unit."""
    sizes = [(limit, measure(text, limit.unit, counter)) for limit in limits]
    return [(limit, size) for limit, size in sizes if size > limit.amount]
