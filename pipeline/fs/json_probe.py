"""A quick look at a history file's raw bytes: may they hold a text at all, in any spelling?

It decides which lines are parsed (most are not), so it must never say no to a line that holds the text, however
the line spells it. Two cases cover every spelling. Either the text's longest words stand in the lowercased bytes
as they are (found for every needle at once in one pass, by an Aho-Corasick automaton), or some character of the
line can change them: a JSON escape (``Lik\\u0065s``) or a character outside ASCII (``Ｌｉｋｅｓ``, an NFD accent, a
zero-width space) whose normal form holds a letter of those words, or that is a mark or an invisible format
character. Only such characters are decoded and looked at, each once; any of them sends the line to be parsed.
"""

from __future__ import annotations

import re
import unicodedata

import ahocorasick_rs

from .text_find import Needle, fold

_ASCII = bytes(range(128))
_ESCAPE_MARK = b"\\u"
_WORD = re.compile(r"\w+|\S+")
PROBES_PER_NEEDLE = 2  # its longest words: each must stand in the bytes for a line to hold it as it is
DIRECT_AFTER = 10_000  # matches past which a probe hidden under another's match is looked for directly


class Probe:
    """The needles' probe words in one automaton, with the characters that could spell them otherwise."""

    def __init__(self, needles: list[Needle]) -> None:
        self.blind = any(needle.normal is None for needle in needles)  # a hashed needle: every line is read
        words = [_probes(needle.normal) for needle in needles if needle.normal is not None]
        self.patterns = sorted({word for group in words for word in group})
        self.groups = [[self.patterns.index(word) for word in group] for group in words]
        self._escape = len(self.patterns)
        encoded = [word.encode("utf-8", "surrogatepass") for word in self.patterns]
        self._encoded = encoded
        self._automaton = ahocorasick_rs.BytesAhoCorasick(
            [*encoded, _ESCAPE_MARK], matchkind=ahocorasick_rs.MatchKind.LeftmostFirst) if encoded else None
        # the words' letters, and the pieces a composed one is made of (a Hangul syllable's jamo, an accent)
        self._chars = {char for word in self.patterns
                       for char in word + "".join(c for c in unicodedata.normalize("NFD", word) if not c.isascii())}
        self._relevant: dict[str, bool] = {}

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data`` (JSON text, raw) may hold any needle in any spelling; never False when it does."""
        if self.blind:
            return bool(data.strip())
        if self._automaton is None:
            return False
        low = data.lower()
        matches = self._automaton.find_matches_as_indexes(low)
        found = {pattern for pattern, _, _ in matches if pattern != self._escape}
        if any(all(word in found for word in group) for group in self.groups):
            return True
        found |= self._hidden(low, matches, found)
        if any(all(word in found for word in group) for group in self.groups):
            return True
        return self._escapes_change(low, matches) or (not data.isascii() and self._characters_change(data))

    def _hidden(self, low: bytes, matches: list[tuple[int, int, int]], found: set[int]) -> set[int]:
        """Probe words the leftmost-first search passed over: each could only stand overlapping a match it made."""
        missing = [index for index in range(len(self.patterns)) if index not in found]
        if not missing or not matches:
            return set()
        if len(matches) > DIRECT_AFTER:
            return {index for index in missing if self._encoded[index] in low}
        hidden = set()
        for index in missing:
            word = self._encoded[index]
            if any(low.find(word, start, end + len(word) - 1) != -1 for _, start, end in matches):
                hidden.add(index)
        return hidden

    def _escapes_change(self, low: bytes, matches: list[tuple[int, int, int]]) -> bool:
        for pattern, start, _ in matches:
            if pattern == self._escape:
                code = low[start + 2:start + 6]
                if len(code) == 4 and all(c in b"0123456789abcdef" for c in code) and self._changes(chr(int(code, 16))):
                    return True
        return False

    def _characters_change(self, data: bytes) -> bool:
        return any(self._changes(char) for char in set(data.translate(None, _ASCII).decode("utf-8", "replace")))

    def _changes(self, char: str) -> bool:
        """Whether ``char`` can make or join a probe word's letters: a letter of them in its normal form, or a
        mark or format character (which combine or vanish)."""
        known = self._relevant.get(char)
        if known is None:
            category = unicodedata.category(char)
            known = self._relevant[char] = (
                category[0] == "M" or category == "Cf" or char in "\u1160\u3164\uffa0"  # the Hangul fillers
                or bool(set(fold(char)) & self._chars))
        return known


def _probes(normal: str) -> list[str]:
    """A needle's longest words (its longest run of anything but spaces when it has no word)."""
    words = re.findall(r"\w+", normal) or _WORD.findall(normal) or [normal]
    return sorted(set(words), key=lambda word: (-len(word), word))[:PROBES_PER_NEEDLE]
