"""The persona block: a target's file, read defensively and capped for injection.

The injector and the session snapshots both inject exactly this, so it lives
apart from both: the same reader, the same size bound, the same cap.
"""

from __future__ import annotations

from .cap import cap_text
from .files import read_regular_prefix
from .problems import ProblemLog
from .settings import ResolvedTarget
from .tokens import get_counter


def read_block(target: ResolvedTarget, *, counter: str, max_bytes: int, problems: ProblemLog) -> str:
    """The target's file now, capped; OSError says why it cannot be read.

    At most ``max_bytes`` are read (whole lines of them), so a huge file costs
    neither the host's memory nor the tokenizer's; bad UTF-8 is replaced.
    Both are warned about once.
    """
    raw, truncated = read_regular_prefix(target.path, max_bytes)
    if truncated:
        problems.warn(f"persona file {target.path} is larger than {max_bytes} bytes (injection.max_file_bytes); "
                      "only its first whole lines up to that size are used")
        raw = raw[: raw.rfind(b"\n") + 1] or raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.warn(f"persona file {target.path} is not valid UTF-8; bad bytes were replaced")
        text = raw.decode("utf-8", errors="replace")
    return cap_block(text, target, counter)


def cap_block(text: str, target: ResolvedTarget, counter: str) -> str:
    """The shared cap with the target's budget, boundary and note, minus any title of the file's own.

    The injector's header is the block's only H1, so a leading ``# Title``
    line is dropped first.
    """
    if text.startswith("# "):
        text = text.partition("\n")[2].lstrip("\n")
    return cap_text(text, budget=target.budget, counter=get_counter(counter), boundary=target.boundary,
                    note=target.truncation_note).text
