"""A quick look at a history file's raw bytes: which lines may hold a text at all, in any spelling?

It decides which lines are parsed (most are not), so it must never pass over a line that holds the text, however
the line spells it. Two cases cover every spelling. Either the text's rarest words stand in the lowercased line as
they are (found for every needle at once in one pass over a block of lines, by an Aho-Corasick automaton), or some
character of the line can change them: a JSON escape (``Lik\\u0065s``) or a character outside ASCII (``Ｌｉｋｅｓ``,
an NFD accent, a zero-width space) whose normal form holds a letter of those words, or that is a mark or an invisible
format character. JSON inside a string spells its own escapes with the outer level's: ``\\\\u0065`` is still
found as an escape, and an escaped backslash, ``u`` or hex digit (``\\u005cu0065``), which can make one, counts as
a character that changes the words; so do a surrogate pair's two escapes at any level. Only such characters are
decoded and looked at, each once; any of them sends its line to be parsed. Which words are rarest is counted in the
first megabyte read, so the automaton reports few matches.

Every pass over a block counts against `grep`'s one, so a block gets only the passes the search needs: one
``bytes.lower()`` (the case-insensitive search), the automaton, the escape search, and only in the 64 KB pieces of
the block that hold a character outside ASCII (``isascii`` of a piece costs a tenth of a pass) the look at those
characters.
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
_HIGH = frozenset({b"d8", b"d9", b"da", b"db"})  # a high surrogate's escape starts a pair
_SECOND_HALF = re.compile(rb"\\+u(d[c-f][0-9a-f]{2})")  # a pair's low surrogate, at the high one's level
_NEXT_LEVEL = frozenset("\\u0123456789abcdefABCDEF")  # escaped, these can spell an escape inside a string's JSON
CHUNK = 1 << 16  # bytes: the pieces a block is looked at for characters outside ASCII
SAMPLE = 1 << 20  # bytes of the first block the probe words' counts are taken from
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
        counts = _counts(_counted(self._words), sample[:SAMPLE])
        rank = {word: (_short(word), counts[word], -len(word), word) for word in every}
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
        """Lines with an escape that spells a character that can change a probe word, or a piece of an escape one
        level down (JSON inside a string)."""
        starts = [start for _, start, _ in self._escape.find_matches_as_indexes(low)]
        if not starts:
            return set()
        codes = {low[start + 2:start + 6] for start in starts}  # each code judged once, however often it stands
        changing = {code for code in codes if self._escape_changes(code)}
        highs = {code for code in codes if code[:2] in _HIGH}  # a pair's character is judged with its second half
        if not changing and not highs:
            return set()
        lines = _Lines(low)
        marked = {lines.around(start) for start in starts if low[start + 2:start + 6] in changing}
        if highs:
            marked |= {lines.around(start) for start in starts
                       if low[start + 2:start + 6] in highs and self._pair_changes(low, start)}
        return marked

    def _escape_changes(self, code: bytes) -> bool:
        """Whether the escape with the hex digits ``code`` spells a character that can change a probe word, or a
        piece of an escape of the next level (a backslash, ``u``, a hex digit)."""
        known = self._escapes.get(code)
        if known is None:
            char = chr(int(code, 16)) if len(code) == 4 and _HEX.issuperset(code) else None
            known = self._escapes[code] = char is not None and (char in _NEXT_LEVEL or self._changes(char))
        return known

    def _pair_changes(self, low: bytes, start: int) -> bool:
        """Whether the high surrogate's escape at ``start`` and the low one after it (at its own level: after as
        many backslashes) spell a character that can change a probe word."""
        second = _SECOND_HALF.match(low, start + 6)
        if second is None:
            return False
        code = low[start + 2:start + 6] + second.group(1)
        known = self._escapes.get(code)
        if known is None:
            high, surrogate = int(code[:4], 16), int(code[4:], 16)
            known = self._escapes[code] = self._changes(chr(0x10000 + (high - 0xD800) * 0x400 + surrogate - 0xDC00))
        return known

    def _by_characters(self, block: bytes, low: bytes) -> set[Span]:
        """Lines with a character outside ASCII that can spell a probe word: one whose normal form holds its
        letters; or format characters (dropped by the normal form) that, taken out, leave every probe word of a
        needle standing in the line."""
        runs = _outside_ascii(block)
        chars = set(b"".join(block[start:end].translate(None, _ASCII) for start, end in runs).decode(
            "utf-8", "replace"))
        lines, marked = _Lines(low), set()
        for char in chars:
            if self._changes(char):
                encoded = char.encode("utf-8", "surrogatepass")
                marked |= {lines.around(at) for start, end in runs for at in _positions(low, encoded, start, end)}
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


def _positions(data: bytes, piece: bytes, start: int, end: int) -> list[int]:
    found, at = [], data.find(piece, start, end)
    while at != -1:
        found.append(at)
        at = data.find(piece, at + len(piece), end)
    return found


def _outside_ascii(block: bytes) -> list[Span]:
    """The stretches of ``block`` (runs of whole :data:`CHUNK`-byte pieces) that hold its bytes outside ASCII:
    ``isascii`` of a piece costs a tenth of reading it, so the pieces of pure ASCII (most of a transcript of code)
    are never looked at again. No character is cut at a stretch's end: the piece beyond it is pure ASCII."""
    runs: list[Span] = []
    for start in range(0, len(block), CHUNK):
        if not block[start:start + CHUNK].isascii():
            end = min(start + CHUNK, len(block))
            if runs and runs[-1][1] == start:
                runs[-1] = (runs[-1][0], end)
            else:
                runs.append((start, end))
    return runs


def _short(word: str) -> bool:
    return len(word.encode("utf-8", "surrogatepass")) < SHORT_PROBE


def _counted(groups: list[list[str]]) -> list[str]:
    """The words whose counts choose a probe word: a short one only for a needle with no longer one (a short word
    is chosen last, and counting ``a`` or ``in`` costs a Python step for each of their many matches)."""
    return sorted({word for words in groups for word in words
                   if not _short(word) or all(_short(other) for other in words)})


def _counts(words: list[str], sample: bytes) -> Counter[str]:
    """How often each of ``words`` stands in ``sample`` (lowercased)."""
    counts: Counter[str] = Counter()
    if words and sample:
        counting = ahocorasick_rs.BytesAhoCorasick([word.encode("utf-8", "surrogatepass") for word in words],
                                                   matchkind=ahocorasick_rs.MatchKind.LeftmostFirst)
        counts.update(words[pattern] for pattern, _, _ in counting.find_matches_as_indexes(sample.lower()))
    return counts


def _line_spans(block: bytes) -> list[Span]:
    starts = [0, *(match.end() for match in _NEWLINE.finditer(block))]
    ends = [start - 1 for start in starts[1:]] + [len(block)]
    return [(start, end) for start, end in zip(starts, ends, strict=True) if end > start or start < len(block)]
