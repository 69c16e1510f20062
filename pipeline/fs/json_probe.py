"""A quick look at a history file's raw bytes: which lines may hold a text at all, in any spelling?

It decides which lines are parsed (most are not), so it must never pass over a line that holds the text, however
the line spells it. Two cases cover every spelling. Either the text's rarest words stand in the lowercased line as
they are (found for every needle at once in one pass over a block of lines, by an Aho-Corasick automaton), or some
character of the line can change them: a JSON escape (``Lik\\u0065s``) or a character outside ASCII (``Ｌｉｋｅｓ``,
an NFD accent, a zero-width space) whose normal form holds a letter of those words, or that is a mark or an invisible
format character. Only such characters are decoded and looked at, each once; any of them sends its line to be
parsed. Which words are rarest is counted in the first block read, so the automaton reports few matches.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

import ahocorasick_rs

from .text_find import Needle, fold

_ASCII = bytes(range(128))
_ESCAPE_MARK = b"\\u"
_NEWLINE = re.compile(b"\n")
_WORD = re.compile(r"\w+")
_HEX = frozenset(b"0123456789abcdef")
SHORT_PROBE = 4  # bytes: an automaton with a shorter pattern loses its SIMD prefilter (10x slower), so those words
# (a needle with no longer one: ``go``) and the escape mark are looked for in automatons of their own
Span = tuple[int, int]


class Probe:
    """The needles' probe words in one automaton, with the characters that could spell them otherwise."""

    def __init__(self, needles: list[Needle]) -> None:
        self.blind = any(needle.normal is None for needle in needles)  # a hashed needle: every line is read
        self._words = [_words(needle.normal) for needle in needles if needle.normal is not None]
        self._automaton: ahocorasick_rs.BytesAhoCorasick | None = None
        self._short: ahocorasick_rs.BytesAhoCorasick | None = None
        self._escape = ahocorasick_rs.BytesAhoCorasick([_ESCAPE_MARK], matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)
        self.patterns: list[bytes] = []
        self.groups: list[list[int]] = []
        self._chars: set[str] = set()
        self._relevant: dict[str, bool] = {}
        self._keys: list[int] = []  # the words in the automatons, in their order there
        self._hiders: dict[int, list[int]] = {}  # per key word: the keys whose leftmost-first match can hide it
        self._escapes: dict[bytes, bool] = {}  # an escape's ten bytes (a pair's too) -> whether it changes a word

    def lines(self, block: bytes) -> list[Span]:
        """The spans of ``block``'s lines (split at ``\\n``, the newline left out) that may hold a needle in any
        spelling, in order."""
        if self.blind:
            return [span for span in _line_spans(block) if block[span[0]:span[1]].strip()]
        if not self._words:
            return []
        low = block.lower()
        marked = self._by_words(low) | self._by_escapes(low)
        if not block.isascii():
            marked |= self._by_characters(block, low)
        return sorted(marked)

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data`` (one JSON text, raw) may hold any needle in any spelling; never False when it does."""
        return bool(self.lines(data.replace(b"\n", b" ")))

    def _ready(self, sample: bytes) -> None:
        """Choose each needle's rarest words by counting them in ``sample`` (the first block read)."""
        if self._automaton is not None:
            return
        every = sorted({word for words in self._words for word in words})
        counts: Counter[int] = Counter()
        if every and sample:
            counting = ahocorasick_rs.BytesAhoCorasick([w.encode("utf-8", "surrogatepass") for w in every],
                                                       matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)
            counts.update(pattern for pattern, _, _ in counting.find_matches_as_indexes(sample.lower()))
        rank = {word: (len(word.encode("utf-8")) < SHORT_PROBE, counts[index], -len(word), word)
                for index, word in enumerate(every)}
        chosen = [sorted(words, key=rank.__getitem__) for words in self._words]
        words = sorted({word for group in chosen for word in group})
        self.patterns = [word.encode("utf-8", "surrogatepass") for word in words]
        self.groups = [[words.index(word) for word in group] for group in chosen]  # each needle's words, rarest first
        # only each needle's rarest word is in an automaton (its other words are looked for in the lines it is in):
        # fewer patterns keep its SIMD search fast
        keys = sorted({group[0] for group in self.groups}, key=lambda key: (len(self.patterns[key]) < SHORT_PROBE,
                                                                             key))
        self._keys = keys
        long_keys = [key for key in keys if len(self.patterns[key]) >= SHORT_PROBE]
        self._long_count = len(long_keys)
        self._hiders = {key: [hider for hider in keys if hider != key
                              and (hider in long_keys) == (key in long_keys)
                              and _overlaps(self.patterns[hider], self.patterns[key])] for key in keys}
        kind = ahocorasick_rs.MatchKind.LeftmostFirst
        self._automaton = ahocorasick_rs.BytesAhoCorasick([self.patterns[key] for key in long_keys]
                                                          or [b"\x00\x00\x00\x00"], matchkind=kind)
        if len(long_keys) < len(keys):
            self._short = ahocorasick_rs.BytesAhoCorasick([self.patterns[key] for key in keys[len(long_keys):]],
                                                          matchkind=kind)
        # the words' letters, and the pieces a composed one is made of (a Hangul syllable's jamo, an accent)
        self._chars = {char for word in words
                       for char in word + "".join(c for c in unicodedata.normalize("NFD", word) if not c.isascii())}

    def _by_words(self, low: bytes) -> set[Span]:
        """Lines where every probe word of some needle stands: found from its rarest word's matches, the others
        looked for in the line (and a rarest word a leftmost-first match of another hid, in the whole block)."""
        self._ready(low)
        assert self._automaton is not None
        matches = [] if not self._long_count else self._automaton.find_matches_as_indexes(low)
        if self._short is not None:
            matches += [(self._long_count + pattern, start, end)
                        for pattern, start, end in self._short.find_matches_as_indexes(low)]
        where: dict[int, list[int]] = {}
        for pattern, start, _ in matches:
            where.setdefault(self._keys[pattern], []).append(start)
        for key, hiders in self._hiders.items():
            hidden = [at for hider in hiders for at in self._hidden(low, key, hider, where.get(hider, []))]
            if hidden:
                where[key] = sorted({*where.get(key, ()), *hidden})
        lines, marked = _Lines(low), set()
        for group in self.groups:
            seen: set[Span] = set()
            for at in where.get(group[0], ()):
                span = lines.around(at)
                if span not in seen:
                    seen.add(span)
                    if all(low.find(self.patterns[word], *span) != -1 for word in group[1:]):
                        marked.add(span)
        return marked

    def _hidden(self, low: bytes, key: int, hider: int, starts: list[int]) -> list[int]:
        """Where ``key`` starts inside one of ``hider``'s matches (at ``starts``), which hid it."""
        pattern, width = self.patterns[key], len(self.patterns[hider])
        found = (low.find(pattern, start, start + width + len(pattern) - 1) for start in starts)
        return [at for at in found if at != -1]

    def _by_escapes(self, low: bytes) -> set[Span]:
        """Lines with an escape that spells a character that can change a probe word."""
        lines, marked = _Lines(low), set()
        for _, start, _ in self._escape.find_matches_as_indexes(low):
            code = low[start + 2:start + 12]
            known = self._escapes.get(code)
            if known is None:
                char = _escaped(low, start)
                known = self._escapes[code] = char is not None and self._changes(char)
            if known:
                marked.add(lines.around(start))
        return marked

    def _by_characters(self, block: bytes, low: bytes) -> set[Span]:
        """Lines with a character outside ASCII that can spell a probe word: one whose normal form holds its
        letters; or format characters (dropped by the normal form) that, taken out, leave every probe word of a
        needle standing in the line."""
        chars = set(block.translate(None, _ASCII).decode("utf-8", "replace"))
        lines, marked = _Lines(low), set()
        for char in chars:
            if self._changes(char):
                encoded = char.encode("utf-8", "surrogatepass")
                marked |= {lines.around(at) for at in _positions(low, encoded)}
        return {span for span in marked if not self._only_formats(low[span[0]:span[1]], chars)}

    def _only_formats(self, line: bytes, chars: set[str]) -> bool:
        """Whether the line's only characters that could spell a probe word are format characters, and taking
        them out leaves no needle's probe words all standing."""
        formats = [char for char in chars if unicodedata.category(char) == "Cf" and char.encode() in line]
        others = [char for char in chars if char not in formats and self._changes(char) and char.encode() in line]
        if others or not formats:
            return False
        for char in formats:
            line = line.replace(char.encode("utf-8"), b"")
        return not any(all(self.patterns[word] in line for word in group) for group in self.groups)

    def _changes(self, char: str) -> bool:
        """Whether ``char`` can make or join a probe word's letters: a letter of them, or a piece of one (an
        accent, a Hangul jamo), in its normal form; or a format character (which vanishes, joining two pieces)."""
        known = self._relevant.get(char)
        if known is None:
            known = self._relevant[char] = unicodedata.category(char) == "Cf" or bool(set(fold(char)) & self._chars)
        return known


def _overlaps(first: bytes, then: bytes) -> bool:
    """Whether a match of ``first`` can cover the start of ``then`` (a suffix of one is a prefix of the other)."""
    return any(then.startswith(first[cut:]) or first[cut:].startswith(then) for cut in range(len(first)))


def _escaped(low: bytes, start: int) -> str | None:
    """The character the escape at ``start`` spells (a surrogate pair's whole character), None if it is none."""
    code = low[start + 2:start + 6]
    if len(code) < 4 or not _HEX.issuperset(code):
        return None
    value = int(code, 16)
    pair = low[start + 8:start + 12]
    if 0xD800 <= value < 0xDC00 and low[start + 6:start + 8] == _ESCAPE_MARK and _HEX.issuperset(pair) \
            and len(pair) == 4 and 0xDC00 <= int(pair, 16) < 0xE000:
        return chr(0x10000 + (value - 0xD800) * 0x400 + int(pair, 16) - 0xDC00)
    return chr(value)


def _words(normal: str) -> list[str]:
    """A needle's words (its longest run of anything but spaces when it has none)."""
    return sorted(set(_WORD.findall(normal))) or [max(normal.split() or [normal], key=len)]


class _Lines:
    """The line around a position of a block, found from the position (a block's lines are never all listed)."""

    def __init__(self, block: bytes) -> None:
        self.block = block
        self.last: Span = (0, -1)  # positions come mostly in order: the line of the last one is asked again first

    def around(self, at: int) -> Span:
        if self.last[0] <= at <= self.last[1]:
            return self.last
        end = self.block.find(b"\n", at)
        self.last = (self.block.rfind(b"\n", 0, at) + 1, len(self.block) if end == -1 else end)
        return self.last


def _positions(data: bytes, piece: bytes) -> list[int]:
    found, at = [], data.find(piece)
    while at != -1:
        found.append(at)
        at = data.find(piece, at + len(piece))
    return found


def _line_spans(block: bytes) -> list[Span]:
    starts = [0, *(match.end() for match in _NEWLINE.finditer(block))]
    ends = [start - 1 for start in starts[1:]] + [len(block)]
    return [(start, end) for start, end in zip(starts, ends, strict=True) if end > start or start < len(block)]
