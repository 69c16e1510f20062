"""The persona block: a target's file, read defensively and capped for injection.

The injector and the session snapshots both inject exactly this, so it lives
apart from both: the same reader, the same size bound, the same cap.
"""

from __future__ import annotations

import threading

from ..config.targets import ResolvedTarget
from ..fs.read import FileRead, read_file
from ..render.notes import lazy_note
from ..render.section_cap import cap_text
from ..render.tokens import get_counter
from ..warn_once import ProblemLog


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
    raw, truncated = found.data, found.truncated
    if truncated:
        problems.warn(f"persona file {target.path} is larger than {max_bytes} bytes (injection.max_file_bytes); "
                      "only its first whole lines up to that size are used")
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.warn(f"persona file {target.path} is not valid UTF-8; bad bytes were replaced")
        text = raw.decode("utf-8", errors="replace")
    return cap_block(text, target, counter, known_tokens=None if truncated else known_tokens)


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
    non-space, so the body's count is the whole count minus the title's.
    """
    key = (text, target, counter)
    capped = _CAPPED.get(key)
    if capped is None:
        body = text.partition("\n")[2].lstrip("\n") if text.startswith("# ") else text
        if known_tokens is not None and known_tokens <= target.budget:
            capped = body
        else:
            capped = cap_text(body, budget=target.budget, counter=get_counter(counter), boundary=target.boundary,
                              note=lazy_note(target)).text
        with _CAPPED_LOCK:
            _CAPPED[key] = capped
            if len(_CAPPED) > MEMO_SIZE:
                _CAPPED.pop(next(iter(_CAPPED)))
    return capped


def forget() -> None:
    """Forget every remembered capped text (benchmarks measure a first read with it)."""
    with _CAPPED_LOCK:
        _CAPPED.clear()


MEMO_SIZE = 64  # distinct (content, target) pairs remembered; persona files are a few KB each
_CAPPED: dict[tuple[str, ResolvedTarget, str], str] = {}
_CAPPED_LOCK = threading.Lock()
