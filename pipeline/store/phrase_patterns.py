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


@dataclass(frozen=True, slots=True, eq=False)  # one per list, made once: compared and hashed as itself
class Alternation:
    """A list's branches in the order they are tried, each with what a text needs to hold for it to match, and
    an index from a word (or a word's start) to the branches that need it, so a text is not checked branch by
    branch."""

    branches: tuple[str, ...]  # each branch's regular expression
    groups: tuple[str, ...]  # each branch's named group ("" for none)
    words: tuple[frozenset[str], ...]  # whole words of the text the branch needs (a phrase's)
    literal: tuple[str, ...]  # a substring of the text the branch needs (a regular expression's; "" for none)
    before: str
    after: str
    by_word: dict[str, tuple[int, ...]]  # a word of the text -> the branches it may start
    by_start: dict[str, tuple[int, ...]]  # a word's start in the text -> the branches it may start
    always: tuple[int, ...]  # the branches no word tells: checked for every text
    word_keys: frozenset[str]  # by_word's keys and by_start's, as sets (a text's words meet them in one step)
    start_keys: frozenset[str]


def _alternation(branches: list[str], groups: list[str], words: list[frozenset[str]], literal: list[str],
                 keys: list[tuple[str, str]], before: str, after: str) -> Alternation:
    by_word: dict[str, list[int]] = {}
    by_start: dict[str, list[int]] = {}
    for index, (kind, key) in enumerate(keys):
        if key:
            (by_word if kind == "word" else by_start).setdefault(key, []).append(index)
    return Alternation(tuple(branches), tuple(groups), tuple(words), tuple(literal), before, after,
                       {key: tuple(found) for key, found in by_word.items()},
                       {key: tuple(found) for key, found in by_start.items()},
                       tuple(index for index, (_, key) in enumerate(keys) if not key), frozenset(by_word),
                       frozenset(by_start))


def phrases_of(spelled: tuple[tuple[str, str], ...], *, before: str = BOUNDED[0], after: str = BOUNDED[1]
               ) -> Alternation:
    """An alternation of phrases, each given as (its branch's expression, the phrase as written), in order."""
    words = [WORD.findall(phrase) for _, phrase in spelled]
    return _alternation([branch for branch, _ in spelled], [""] * len(spelled), [frozenset(found) for found in words],
                        [""] * len(spelled), [("word", found[0] if found else "") for found in words], before, after)


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
    literals = [_literal(branch) for _, branch in pairs]
    return _alternation([branch for _, branch in pairs], [name for name, _ in pairs], [frozenset()] * len(pairs),
                        [literal for literal, _ in literals], [("start", key) for _, key in literals], *BOUNDED)


def for_text(alternation: Alternation, text: str) -> re.Pattern[str]:
    """The alternation of the branches ``text`` can hold, compiled (a pattern matching nothing when none can)."""
    words = _words(text)
    found = [*alternation.always]
    for key in words & alternation.word_keys:
        found += alternation.by_word[key]
    if alternation.start_keys:
        for key in _starts(text) & alternation.start_keys:
            found += alternation.by_start[key]
    kept = tuple(sorted(index for index in set(found)
                        if alternation.words[index] <= words and alternation.literal[index] in text))
    return _compiled(alternation, kept)


@caches.memo("phrase_patterns.words", owner="process", key="a fact's text (or a clause of it)", bound=512,
             holds_text=True)
def _words(text: str) -> frozenset[str]:
    return frozenset(WORD.findall(text))


@caches.memo("phrase_patterns.starts", owner="process", key="a fact's text (or a clause of it)", bound=512,
             holds_text=True)
def _starts(text: str) -> frozenset[str]:
    """Every start of each of the text's words ("travaill" of "travaille")."""
    return frozenset(word[:end] for word in _words(text) for end in range(1, len(word) + 1))


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


def _literal(branch: str) -> tuple[str, str]:
    """The longest run of plain characters at the branch's top level that every match of it spells, and the first
    word of the text any match starts ("" when none is sure): the branch's own first word (its start is bounded
    by the lookbehind), else one after a plain non-word character ("(?:be|is) called": "called")."""
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
    runs.append(run)
    return max(runs, key=len), _first_word(branch, runs)


def _first_word(branch: str, runs: list[str]) -> str:
    """A word every match starts a word of the text with: the leading plain run's first, or the first word after a
    plain non-word character in a run."""
    leading = runs[0] or (runs[1] if len(runs) > 1 and branch.startswith(runs[1]) else "")
    first = WORD.match(leading) if leading else None
    if first is not None:
        return first[0]
    for run in runs:
        inner = re.search(r"\W(\w+)", run)
        if inner is not None:
            return inner[1]
    return ""
