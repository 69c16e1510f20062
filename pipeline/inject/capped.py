"""The cap as injection applies it, shared by both sources: the same size bound, the same cap, one memo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import caches
from ..config.targets import ResolvedTarget
from ..render.limits import limited, over
from ..render.notes import lazy_note
from ..render.section_cap import cap_text
from ..render.tokens import HeuristicCounter, get_counter
from ..warn_once import ProblemLog

if TYPE_CHECKING:
    from ..config.sections import HostLimit


def decoded(raw: bytes, truncated: bool, what: str, max_bytes: int, problems: ProblemLog) -> str:
    """The text of what was read: whole lines only when it was cut at ``max_bytes``, bad UTF-8 replaced."""
    if truncated:
        problems.warn(f"{what} is larger than {max_bytes} bytes (injection.max_file_bytes); only its first whole "
                      "lines up to that size are used")
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.warn(f"{what} is not valid UTF-8; bad bytes were replaced")
        return raw.decode("utf-8", errors="replace")


def cap_block(text: str, target: ResolvedTarget, counter: str, *, known_tokens: int | None = None) -> str:
    """The shared cap with the target's budget, boundary and note, minus any title of the file's own.

    The injector's header is the block's only H1, so a leading ``# Title``
    line is dropped first. Results are remembered per content: hosts build new
    injectors (a new agent, a new session) for the same file all the time, and
    only the first of them needs to count its tokens.

    ``known_tokens`` is the text's exact count under ``counter`` (the render
    that wrote it recorded it). Within the budget, the cap would keep the text
    whole, so nothing is counted and the tokenizer need not even load: a
    one-shot ``persona inject`` saved most of a second. A title only takes
    tokens away: the tokenizer splits text at a line break followed by a
    non-space, so the body's count is the whole count minus the title's. A
    count no tokenizer could give for text this long (more than
    MAX_CHARS_PER_TOKEN characters a token) is not trusted either.
    """
    key = (text, target, counter)
    capped: str | None = _CAPPED.get(key)
    if capped is None:
        body = text.partition("\n")[2].lstrip("\n") if text.startswith("# ") else text
        if known_tokens is not None and known_tokens <= target.budget and plausible(body, known_tokens):
            capped = body
        else:
            capped = cap_text(body, budget=target.budget, counter=get_counter(counter), boundary=target.boundary,
                              note=lazy_note(target)).text
        _CAPPED.put(key, capped)
    return capped


def within_limits(text: str, target: ResolvedTarget, counter: str, limits: Sequence[HostLimit],
                  overhead: str = "") -> str:
    """``text`` (already capped to the budget) cut at section boundaries until it and ``overhead`` fit every limit
    (a host's hook that reads characters, not tokens)."""
    if not limits or not over(overhead + text, limits, _NO_TOKENS if _no_tokens(limits) else get_counter(counter)):
        return text
    limiting = limited(get_counter(counter), target.budget, limits, overhead)
    return cap_text(text, budget=target.budget, counter=limiting, boundary=target.boundary,
                    note=lazy_note(target)).text


def _no_tokens(limits: Sequence[HostLimit]) -> bool:
    return all(limit.unit != "tokens" for limit in limits)


def plausible(text: str | bytes, tokens: int) -> bool:
    """Whether ``tokens`` can be the count of ``text`` (a byte is never less than a character)."""
    return len(text) <= max(tokens, 1) * MAX_CHARS_PER_TOKEN


def clear_memo() -> None:
    """Drop every remembered capped text (benchmarks measure a first read with it)."""
    _CAPPED.clear()


MAX_CHARS_PER_TOKEN = 32  # prose is about 4; beyond this a recorded count is implausible, so the text is counted
MEMO_SIZE = 64  # distinct (content, target) pairs remembered; persona files are a few KB each
_CAPPED = caches.cache("capped.texts", owner="profile", key="a persona file's text, its target and the counter",
                       bound=MEMO_SIZE, holds_text=True)
_NO_TOKENS = HeuristicCounter()  # never asked: a check in characters or bytes alone loads no tokenizer
