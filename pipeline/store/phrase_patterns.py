"""The word lists of the proposal rules as patterns compiled for the text at hand (issue 52).

A list becomes one alternation, tried in a fixed order (longest phrase first, as every reader wants). Compiling
every list's whole alternation cost a new process about a tenth of a second on its first write, and running it
tried each branch at each word of the text. Here a list is indexed once (cheaply, without ``re``), and a text gets
the alternation of only the branches it can hold: those whose literal pieces are all in it. A branch that cannot
match anywhere in the text changes no match when left out (an alternation takes the first branch, in order, that
matches at a place), so the matches, their groups and their order are the whole list's; a text that can hold none
gets a pattern that matches nothing, and no list is compiled at all.

A phrase of words (``"no longer"``, ``"he/him"``) can match only where each run of word characters it spells is a
whole word of the text (its ends are bounded by its lookarounds or by its own non-word characters), so it is kept
by set membership. A branch written as a regular expression (the slot cues) is kept where its longest literal run
(outside groups, not made optional by a quantifier) is a substring of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import caches

BOUNDED = r"(?<!\w)", r"(?!\w)"  # a phrase is a whole word or words
SPACED, GAPPED = r"\s+", r"\s+(?:\w+\s+)?"  # between a phrase's words: space; or space and one word let in
WORD = re.compile(r"\w+")
_META = frozenset("\\.^$*+?{}[]|()")
_QUANTIFIERS = frozenset("?*+{")


@dataclass(frozen=True, slots=True)
class Alternation:
    """A list's branches in the order they are tried, each with what a text needs to hold for it to match."""

    branches: tuple[str, ...]  # each branch's regular expression
    groups: tuple[str, ...]  # each branch's named group ("" for none)
    words: tuple[frozenset[str], ...]  # whole words of the text the branch needs (a phrase's)
    literal: tuple[str, ...]  # a substring of the text the branch needs (a regular expression's; "" for none)
    before: str
    after: str


def phrases_of(spelled: tuple[tuple[str, str], ...], *, before: str = BOUNDED[0], after: str = BOUNDED[1]
            ) -> Alternation:
    """An alternation of phrases, each given as (its branch's expression, the phrase as written), in order."""
    return Alternation(tuple(branch for branch, _ in spelled), ("",) * len(spelled),
                       tuple(frozenset(WORD.findall(phrase)) for _, phrase in spelled), ("",) * len(spelled),
                       before, after)


@caches.memo("phrase_patterns.listed", owner="process", key="a tuple of the word lists' phrases, and the gap",
             bound=128)
def listed(phrases: tuple[str, ...], gap: str = SPACED) -> Alternation:
    """A list's phrases, longest (as spelled in the pattern) first, each in its list's order among equals."""
    spelled = sorted(((re.escape(p).replace(r"\ ", gap), p) for p in phrases), key=lambda pair: len(pair[0]),
                     reverse=True)
    return phrases_of(tuple(spelled))


def named(expressions: dict[str, str]) -> Alternation:
    """An alternation of regular expressions, a named group per key (``{"editor": "editor|ide|..."}``)."""
    pairs = [(name, branch) for name, expression in expressions.items() for branch in _top_level(expression)]
    return Alternation(tuple(branch for _, branch in pairs), tuple(name for name, _ in pairs),
                       (frozenset(),) * len(pairs), tuple(_literal(branch) for _, branch in pairs),
                       *BOUNDED)


def for_text(alternation: Alternation, text: str) -> re.Pattern[str]:
    """The alternation of the branches ``text`` can hold, compiled (a pattern matching nothing when none can)."""
    words = frozenset(WORD.findall(text))
    kept = tuple(index for index, (needed, literal) in enumerate(zip(alternation.words, alternation.literal,
                                                                      strict=True))
                 if needed <= words and literal in text)
    return _compiled(alternation, kept)


@caches.memo("phrase_patterns.compiled", owner="process",
             key="a word list and which of its branches (no fact text: the list's own phrases)", bound=2048)
def _compiled(alternation: Alternation, kept: tuple[int, ...]) -> re.Pattern[str]:
    if not kept:
        return re.compile(r"(?!)")
    parts: list[str] = []
    last = None
    for index in kept:
        group, branch = alternation.groups[index], alternation.branches[index]
        if group and group == last:
            parts[-1] = parts[-1][:-1] + "|" + branch + ")"  # the group's branches stay one group
        else:
            parts.append(f"(?P<{group}>{branch})" if group else branch)
        last = group
    return re.compile(alternation.before + "(?:" + "|".join(parts) + ")" + alternation.after)


def _top_level(expression: str) -> list[str]:
    """``expression``'s branches: split at each ``|`` outside groups and classes."""
    found, depth, start, index, in_class = [], 0, 0, 0, False
    while index < len(expression):
        char = expression[index]
        if char == "\\":
            index += 1
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth == 0:
            found.append(expression[start:index])
            start = index + 1
        index += 1
    return [*found, expression[start:]]


def _literal(branch: str) -> str:
    """The longest run of plain characters at the branch's top level that every match of it spells."""
    runs, run, depth, index = [""], "", 0, 0
    while index < len(branch):
        char, following = branch[index], branch[index + 1:index + 2]
        plain = depth == 0 and char not in _META and following not in _QUANTIFIERS
        if plain:
            run += char
        else:
            runs.append(run)
            run = ""
        if char == "\\":
            index += 1  # an escape (\w, \s, \.) is no plain character, nor what it escapes
        elif char in "[{":  # a class, a count: nothing in either is spelled as it stands
            index = branch.index("]" if char == "[" else "}", index + 2 if char == "[" else index)
        elif char in "()":
            depth += 1 if char == "(" else -1
        index += 1
    return max((*runs, run), key=len)
