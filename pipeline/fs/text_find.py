"""Finding a forgotten text in one text field of a host's history: in its normal form, on word boundaries.

A field is compared in the form facts are compared in (:func:`pipeline.text.normal_form`: Unicode NFKC, invisible
format characters dropped, case folded, dashes unified, spacing collapsed), so the text is found in NFD, in full
width, in another case, across a line break or with a zero-width space inside it. That form is built segment by
segment (a character with the marks that combine with it), so each match maps back to exactly the characters that
spelled it, and only those are replaced. A text known only by its keyed hash (a forget the journal finishes) is
found by hashing each window of the field's words that has the text's recorded length.

A fact of one or two short words (``user``, ``Go``, ``main``) is replaced only where it is a message's whole text:
anywhere else it is reported, never replaced, so a common word is never taken out of a sentence.
"""

from __future__ import annotations

import hmac
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..text import DASHES

MARKER = "[forgotten]"
SHORT_WORDS, SHORT_CHARS = 2, 12  # a fact this small is replaced only where it stands alone as a message's text
_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word, or one mark: the windows a hashed text is looked for in
_DOMAIN = b"history\x00"  # keeps these hashes apart from the store's other keyed hashes


# Unicode's format characters (category Cf), which the normal form drops (a test checks the list against Python's
# Unicode database): a regular expression removes them faster than a look at each character's category.
_FORMAT = re.compile("[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
                     "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                     "\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
                     "\U000e0020-\U000e007f]")


# The dashes the normal form unifies (its table's characters): a regular expression replaces them ten times faster
# than ``str.translate`` looks up each character of a long text.
_DASH = re.compile("[" + re.escape("".join(map(chr, DASHES))) + "]")


def fold(text: str) -> str:
    """The normal form's character mapping, without collapsing spaces: NFKC, format characters dropped, case
    folded, NFKC again, dashes unified (for ASCII text: lower case, the same)."""
    if text.isascii():
        return text.lower()
    visible = _FORMAT.sub("", unicodedata.normalize("NFKC", text))
    return _DASH.sub("-", unicodedata.normalize("NFKC", visible.casefold()))


def digest(key: bytes, normal: str) -> str:
    """The keyed hash a text's normal form is journaled and found by."""
    return hmac.digest(key, _DOMAIN + normal.encode("utf-8", "surrogatepass"), "sha256").hex()


@dataclass(frozen=True, slots=True)
class Needle:
    """One text to take out: its keyed hash, the length of its normal form in tokens and characters, and the
    normal form itself when it is known (a forget running now; None when the journal knows only the hash)."""

    digest: str
    tokens: int
    chars: int
    short: bool
    normal: str | None = None


def needle(key: bytes, normal: str) -> Needle:
    """The needle for a text's normal form (:func:`pipeline.text.normal_form`)."""
    short = len(normal.split()) <= SHORT_WORDS and len(normal) <= SHORT_CHARS
    return Needle(digest(key, normal), len(_TOKEN.findall(normal)), len(normal), short, normal)


@dataclass
class Found:
    """What one field holds: the spans to replace (in the field's own characters), and whether a short fact stands
    in it where it is not replaced (inside a longer text, or outside a message)."""

    spans: list[tuple[int, int]] = field(default_factory=list)
    short_left: bool = False


class Finder:
    """Finds a set of needles in text fields. ``key`` is the store's key, needed for needles known by hash."""

    def __init__(self, needles: Iterable[Needle], key: bytes = b"") -> None:
        self.needles = list(needles)
        self.key = key
        known = sorted({n.normal for n in self.needles if n.normal and not n.short}, key=len, reverse=True)
        self._long = _pattern(known)
        self._short = {n.normal for n in self.needles if n.normal and n.short}
        self._short_any = _pattern(sorted(self._short, key=len, reverse=True))
        self._forms = [n.normal for n in self.needles if n.normal]
        self._hashed = [n for n in self.needles if n.normal is None]
        self._hashed_digests = {n.digest: n for n in self._hashed}
        self._windows = sorted({(n.tokens, n.chars) for n in self._hashed if not n.short})

    @property
    def blind(self) -> bool:
        """Whether some needle is known by its hash alone (every field must then be read in full)."""
        return bool(self._hashed)

    def find(self, text: str, *, message: bool) -> Found:
        """The spans of ``text`` to replace; ``message``: the field is a message's own text."""
        if not text or not self._may_hold(" ".join(fold(text).split()), message):
            return Found()
        normal, starts, ends = mapped(text)
        found = Found()
        if self._whole_short(normal):
            if message:
                found.spans.append((0, len(text)))
                return found
            found.short_left = True
            return found
        spans = self._long_spans(normal) + self._hashed_spans(normal)
        found.short_left = bool(self._short_any and self._short_any.search(normal)) or self._short_hashed(normal)
        found.spans = _merged([(starts[a], ends[b - 1]) for a, b in spans])
        return found

    def _may_hold(self, normal: str, message: bool) -> bool:
        """A quick look at the whole field's normal form before the mapped one is built."""
        if normal in self._short or any(form in normal for form in self._forms):
            return True
        if not self._hashed:
            return False
        return self._whole_short(normal) or any(hit is not None for _, hit in self._windows_of(
            normal, {(n.tokens, n.chars) for n in self._hashed}))

    def _whole_short(self, normal: str) -> bool:
        if normal in self._short:
            return True
        hashed = self._hashed_digests.get(digest(self.key, normal)) if self._hashed else None
        return hashed is not None and hashed.short

    def _long_spans(self, normal: str) -> list[tuple[int, int]]:
        return [m.span() for m in self._long.finditer(normal)] if self._long else []

    def _hashed_spans(self, normal: str) -> list[tuple[int, int]]:
        if not self._windows:
            return []
        return [span for span, hit in self._windows_of(normal) if hit is not None and not hit.short]

    def _short_hashed(self, normal: str) -> bool:
        if not any(n.short for n in self._hashed):
            return False
        shorts = {(n.tokens, n.chars) for n in self._hashed if n.short}
        return any(hit is not None and hit.short for _, hit in self._windows_of(normal, shorts))

    def _windows_of(self, normal: str, sizes: Iterable[tuple[int, int]] | None = None
                    ) -> Iterator[tuple[tuple[int, int], Needle | None]]:
        """Each window of ``normal``'s tokens as long as a hashed needle, with the needle its hash names."""
        spans = [match.span() for match in _TOKEN.finditer(normal)]
        starts, ends = [start for start, _ in spans], [end for _, end in spans]
        wanted: dict[int, set[int]] = {}
        for count, chars in sizes or self._windows:
            wanted.setdefault(count, set()).add(chars)
        for count, lengths in wanted.items():  # only windows of a hashed text's length are hashed
            fits = (end - start in lengths for start, end in zip(starts, ends[count - 1:], strict=False))
            for first in [index for index, fit in enumerate(fits) if fit]:
                start, end = starts[first], ends[first + count - 1]
                yield (start, end), self._hashed_digests.get(digest(self.key, normal[start:end]))


def _pattern(forms: list[str]) -> re.Pattern[str] | None:
    """A match of any of ``forms`` that is not part of a longer word (``go`` is not found in ``google``)."""
    if not forms:
        return None
    return re.compile("|".join((r"(?<!\w)" if _word(form[0]) else "") + re.escape(form)
                               + (r"(?!\w)" if _word(form[-1]) else "") for form in forms))


def _word(char: str) -> bool:
    return bool(re.match(r"\w", char))


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans sorted, overlapping ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def mapped(text: str) -> tuple[str, list[int], list[int]]:
    """``text``'s normal form (spaces collapsed, ends trimmed, final marks kept) and, for each of its characters,
    where the segment of ``text`` that made it starts and ends."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    space: tuple[int, int] | None = None
    for start, end in segments(text):
        for char in fold(text[start:end]):
            if char.isspace():
                space = (start, end) if chars and space is None else space
                continue
            if space is not None:
                chars.append(" ")
                starts.append(space[0])
                ends.append(space[1])
                space = None
            chars.append(char)
            starts.append(start)
            ends.append(end)
    return "".join(chars), starts, ends


def segments(text: str) -> Iterator[tuple[int, int]]:
    """``text`` cut before every character that composes with nothing before it: NFKC, case folding and the other
    steps of the normal form then work on each segment alone as they work on the whole."""
    start = 0
    for index in range(1, len(text)):
        if not _joins(text[index]):
            yield start, index
            start = index
    if text:
        yield start, len(text)


def _joins(char: str) -> bool:
    """Whether ``char`` may compose with the character before it: a mark (every second character of a Unicode
    composition that is not a Hangul jamo is one), or a Hangul vowel or final consonant jamo."""
    if char < "\u0300":
        return False
    code = ord(char)
    return unicodedata.category(char)[0] == "M" or 0x1161 <= code <= 0x1175 or 0x11A8 <= code <= 0x11C2
