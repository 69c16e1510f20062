"""The one token counter of the project, shared by the cap, the renderer and the injector."""

from __future__ import annotations

import importlib.util
import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from .. import caches
from ..errors import ConfigError

log = logging.getLogger(__name__)

EXACT_ENCODINGS = ("o200k_base", "cl100k_base")
NO_LIMIT = 2**62
HEURISTIC = "heuristic"


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def bound(self, text: str) -> int:
        """A number never below ``count(text)``, made without loading a tokenizer."""
        ...


def utf8_length(text: str) -> int:
    """``text``'s UTF-8 byte length (a lone surrogate, which no tokenizer takes, as the 3 bytes it would be)."""
    return len(text.encode("utf-8", "surrogatepass"))


# After a line end, before a character that is neither white space nor "/": there the pre-tokenizer of both exact
# encodings always cuts. No piece of their split pattern spans it (a piece of letters or digits takes no line end,
# one of punctuation takes line ends and "/" only at its end, one of white space holds neither such character), and
# none looks behind, so each side splits as it would alone; BPE then merges within a piece only.
_SEGMENT = re.compile(r"(?<=\n)(?=[^\s/])")


def segments(text: str) -> list[str]:
    """``text`` cut where o200k_base's and cl100k_base's pre-tokenizer always cuts (a line, with the blank lines
    after it): its exact count is the sum of its segments' (tests/render/test_tokens.py checks it), so a segment
    counted once, a fact's line or a heading, is never counted again."""
    return _SEGMENT.split(text)


class ExactCounter:
    """Exact BPE counts from toktok (offline, no data files), loaded at the first exact count.

    Loading builds the encoding's table, about a quarter of a second in every new process, so nothing loads it
    before a count decides something: :meth:`bound` answers "does it fit?" for a text far inside its budget.
    The bound is the text's UTF-8 byte length. o200k_base and cl100k_base are byte-level BPE: the text's UTF-8
    bytes are split into pieces and each piece is merged into tokens of one or more whole bytes (toktok's
    vocabularies are compiled in, with all 256 single bytes; it counts special-token strings such as
    ``<|endoftext|>`` as ordinary text unless ``with_special``, which we never pass, and even then a special token
    is one token for several bytes), so no count exceeds the byte length. tests/render/test_tokens.py checks it on
    code, CJK, emoji, Arabic, line ends and runs of one byte.
    """

    # Below this many texts, counting one by one beats waking toktok's thread pool (measured on
    # 2 cores: 200 texts, 0.6 ms one by one against 0.7 ms batched; 2,000 short lines, 1.4 against 0.7).
    BATCH_FROM = 500

    def __init__(self, encoding: str) -> None:
        self.name = encoding
        self._loaded: tuple[Callable[..., list[int]], Callable[..., tuple[str, int]]] | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        """Import toktok and build the encoding's table (once; the first exact count does it).

        Not in the background of the render: the build takes the GIL, and beside a render's Python work it was
        starved (measured on 2 cores: a fresh 1,000-fact render 1.6x slower with the load in a thread)."""
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    import toktok

                    toktok.batch_count(["warm up"], self.name)  # the table, now rather than mid-count
                    self._loaded = (toktok.batch_count, toktok.truncate)

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    @property
    def exact(self) -> bool:
        """Whether its counts are the encoding's own (worth keeping beyond this process)."""
        return True

    def bound(self, text: str) -> int:
        return utf8_length(text)

    def count(self, text: str) -> int:
        if not text:
            return 0
        self.load()
        assert self._loaded is not None
        # truncate() with no real limit returns the whole count, on this thread: a third of the
        # time batch_count takes to hand one text to its pool and back.
        return self._loaded[1](text, NO_LIMIT, self.name)[1]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if len(texts) < self.BATCH_FROM:
            return [self.count(text) for text in texts]
        self.load()
        assert self._loaded is not None
        return list(self._loaded[0](list(texts), self.name))


# ASCII words, single punctuation marks, whitespace runs, and any other character.
_PIECES = re.compile(r"[A-Za-z0-9_]+|[!-/:-@\[-`{-~]|\s+|[^\x00-\x7f]")
_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


class HeuristicCounter:
    """A conservative estimate for when no tokenizer loads.

    It over-counts on purpose: a word costs one token per three letters, CJK one
    per character, and any other non-ASCII character two, so a capped text
    stays within budget under real BPE counts.
    """

    name = HEURISTIC

    def count(self, text: str) -> int:
        total = 0
        for piece in _PIECES.findall(text):
            if piece[0].isascii() and (piece[0].isalnum() or piece[0] == "_"):
                total += math.ceil(len(piece) / 3)
            elif piece.isascii():
                total += 1
            else:
                total += 1 if _CJK.match(piece) else 2
        return total

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]

    def bound(self, text: str) -> int:
        return self.count(text)  # cheap already, and no tokenizer


class _Fallback(ExactCounter):
    """An exact counter that turns into the heuristic, with a warning, if the tokenizer cannot load: the
    tokenizer is optional at run time, and a missing wheel must not stop injection. It keeps the encoding's name
    (the wrappers and memos took it already): the heuristic over-counts, so a count it records is still never
    below the encoding's; :attr:`exact` says whether its counts may be kept beyond this process."""

    def __init__(self, encoding: str) -> None:
        super().__init__(encoding)
        self._heuristic: HeuristicCounter | None = None

    def load(self) -> None:
        if self._heuristic is not None:
            return
        try:
            super().load()
        except Exception as error:
            log.warning("token counter %s could not load (%s); using the conservative heuristic", self.name, error)
            self._heuristic = HeuristicCounter()

    @property
    def exact(self) -> bool:
        return self._heuristic is None

    def bound(self, text: str) -> int:
        return utf8_length(text) if self._heuristic is None else self._heuristic.bound(text)

    def count(self, text: str) -> int:
        self.load()
        return super().count(text) if self._heuristic is None else self._heuristic.count(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.load()
        return super().count_many(texts) if self._heuristic is None else self._heuristic.count_many(texts)


@caches.memo("tokens.get_counter", owner="process", key="a counter's name", bound=8)
def get_counter(name: str) -> TokenCounter:
    """The counter for a name. An exact one loads its tokenizer at its first exact count (a render whose bound
    fits never does); it falls back to the heuristic, with a warning, if the tokenizer cannot load then."""
    if name == HEURISTIC:
        return HeuristicCounter()
    if name not in EXACT_ENCODINGS:
        raise ConfigError([f"cap.counter: unknown token counter {name!r}; expected o200k_base, cl100k_base or "
                           "heuristic"])
    try:
        found = importlib.util.find_spec("toktok")  # without importing it: the wheel is there, or not
    except (ImportError, ValueError) as error:
        found, reason = None, str(error)
    else:
        reason = "no module named 'toktok'"
    if found is None:
        log.warning("token counter %s could not load (%s); using the conservative heuristic", name, reason)
        return HeuristicCounter()
    return _Fallback(name)


class EitherLineEnd:
    """``inner``'s count of a text as it reads with LF or CRLF line ends, whichever costs more.

    A region lives in the user's file and speaks its line ends (CRLF in a
    Windows file), and some tokenizers count ``!\\r\\n`` as two tokens where
    ``!\\n`` is one; the host reads the file's bytes, so the budget must hold
    for either spelling. Counting both keeps the render the same whatever
    the file's line ends are.
    """

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name

    def count(self, text: str) -> int:
        lf = text.replace("\r\n", "\n")
        crlf = lf.replace("\n", "\r\n")
        if lf == crlf:
            return self.inner.count(text)
        return max(self.inner.count_many([lf, crlf]))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        lf = [text.replace("\r\n", "\n") for text in texts]
        both = self.inner.count_many([*lf, *(text.replace("\n", "\r\n") for text in lf)])
        return [max(pair) for pair in zip(both[:len(lf)], both[len(lf):], strict=True)]

    def bound(self, text: str) -> int:
        lf = text.replace("\r\n", "\n")
        return max(self.inner.bound(lf), self.inner.bound(lf.replace("\n", "\r\n")))


def plain_exact(counter: TokenCounter, text: str) -> ExactCounter | None:
    """The exact counter whose count of ``text`` is ``counter``'s (itself, or the one inside a line-end wrapper
    when the text has no line end to respell), or None: then only ``counter`` knows its count."""
    if isinstance(counter, EitherLineEnd) and "\n" not in text:
        counter = counter.inner
    return counter if isinstance(counter, ExactCounter) else None
