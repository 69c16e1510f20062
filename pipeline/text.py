"""Facts about text that every layer shares."""

# What str.splitlines ends a line at: a setting that must stay on one line may contain none of these.
LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 fact``, ``2 facts``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
