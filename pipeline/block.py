"""The persona block: a target's file, read defensively and capped for injection.

The injector and the session snapshots both inject exactly this, so it lives
apart from both: the same reader, the same size bound, the same cap.
"""

from __future__ import annotations

import hashlib
import threading

from .blocks import BoundedBlock
from .cap import cap_text
from .files import FileRead, read_file
from .problems import ProblemLog
from .settings import ResolvedTarget
from .tokens import get_counter


def read_block(target: ResolvedTarget, *, counter: str, max_bytes: int, problems: ProblemLog) -> str:
    """The target's file now, capped; OSError says why it cannot be read.

    At most ``max_bytes`` are read (whole lines of them), so a huge file costs
    neither the host's memory nor the tokenizer's; bad UTF-8 is replaced.
    Both are warned about once.
    """
    return block_of(read_file(target.path, max_bytes), target, counter=counter, max_bytes=max_bytes,
                    problems=problems)


def block_of(found: FileRead, target: ResolvedTarget, *, counter: str, max_bytes: int, problems: ProblemLog,
             known_tokens: int | None = None) -> str:
    """The capped block of a file already read; ``known_tokens`` is its exact count, when a render recorded it."""
    text = _decoded(found.data, found.truncated, f"persona file {target.path}", max_bytes, problems)
    return cap_block(text, target, counter, known_tokens=None if found.truncated else known_tokens)


def stored_block_of(found: BoundedBlock, target: ResolvedTarget, *, counter: str, max_bytes: int,
                    problems: ProblemLog) -> str:
    """The capped block of a stored row read with at most ``max_bytes`` bytes (see ``blocks.read_bounded``).

    The row's recorded token count is trusted only for the exact bytes it was
    made from: the whole text, whose sha256 is the recorded one, under the
    same counter. Another tool may have changed the text and left the count;
    such a row is counted and capped like a hand-edited file, with one warning.
    """
    what = f"stored block {target.name!r} of profile {target.profile!r}"
    known = None if found.truncated else _trusted_count(found, what, counter, target, problems)
    return cap_block(_decoded(found.data, found.truncated, what, max_bytes, problems), target, counter,
                     known_tokens=known)


def _trusted_count(found: BoundedBlock, what: str, counter: str, target: ResolvedTarget,
                   problems: ProblemLog) -> int | None:
    """The row's recorded count if it was made from exactly these bytes and could be true of them, else None."""
    untrusted = f"its recorded token count is ignored and it is capped to {target.budget} tokens"
    if hashlib.sha256(found.data).hexdigest() != found.sha256:
        problems.warn(f"{what} does not match its recorded sha256 (changed outside persona-tier?); {untrusted}")
        return None
    if found.counter != counter or type(found.tokens) is not int:
        return None  # another counter's count (the settings changed): counting is all it takes
    if not _plausible(found.data, found.tokens):
        problems.warn(f"{what} records {found.tokens} tokens for {len(found.data)} bytes, which no counter "
                      f"gives (changed outside persona-tier?); {untrusted}")
        return None
    return found.tokens


def _decoded(raw: bytes, truncated: bool, what: str, max_bytes: int, problems: ProblemLog) -> str:
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
    capped = _CAPPED.get(key)
    if capped is None:
        body = text.partition("\n")[2].lstrip("\n") if text.startswith("# ") else text
        if known_tokens is not None and known_tokens <= target.budget and _plausible(body, known_tokens):
            capped = body
        else:
            capped = cap_text(body, budget=target.budget, counter=get_counter(counter), boundary=target.boundary,
                              note=target.truncation_note).text
        with _CAPPED_LOCK:
            _CAPPED[key] = capped
            if len(_CAPPED) > MEMO_SIZE:
                _CAPPED.pop(next(iter(_CAPPED)))
    return capped


def _plausible(text: str | bytes, tokens: int) -> bool:
    """Whether ``tokens`` can be the count of ``text`` (a byte is never less than a character)."""
    return len(text) <= max(tokens, 1) * MAX_CHARS_PER_TOKEN


def forget() -> None:
    """Forget every remembered capped text (benchmarks measure a first read with it)."""
    with _CAPPED_LOCK:
        _CAPPED.clear()


MAX_CHARS_PER_TOKEN = 32  # prose is about 4; beyond this a recorded count is implausible, so the text is counted
MEMO_SIZE = 64  # distinct (content, target) pairs remembered; persona files are a few KB each
_CAPPED: dict[tuple[str, ResolvedTarget, str], str] = {}
_CAPPED_LOCK = threading.Lock()
