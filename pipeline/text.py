"""Facts about text that every layer shares."""

import unicodedata

# What str.splitlines ends a line at: a setting that must stay on one line may contain none of these.
LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# Every dash and hyphen a paste may carry, after NFKC (which already maps U+2011 to U+2010 and U+FF0D to "-").
DASHES = str.maketrans(dict.fromkeys(
    "\u058a\u05be\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d", "-"))
# A sentence's final marks (and the spaces between them): "Uses uv." and "Uses uv" state one fact.
FINAL_MARKS = ".!?;:,\u2026\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001 "


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 fact``, ``2 facts``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def normal_form(text: str) -> str:
    """The one form two texts are compared in: the same fact in other case, spacing, Unicode form (NFD from a
    macOS paste, full-width digits), invisible format characters, dashes or final punctuation is the same text.

    Compared, never shown: what is stored and rendered stays as the user wrote it.
    """
    visible = "".join(char for char in unicodedata.normalize("NFKC", str(text)) if unicodedata.category(char) != "Cf")
    # Casefolding can leave a text that is no longer NFKC ("ǰ" -> "ǰ"), hence the second pass.
    folded = unicodedata.normalize("NFKC", visible.casefold()).translate(DASHES)
    return " ".join(folded.split()).rstrip(FINAL_MARKS)
