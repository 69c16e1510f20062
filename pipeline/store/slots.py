"""What a fact is about: the slots it fills (the editor, the employer, where the user lives, the diet, a name...)
and their values, so a change is judged by structure rather than wording (issue 50).

Two facts about the same slot with another value are a change ("Uses Vim as the editor" / "Moved over to Zed");
a new fact that names the old value as left behind is a change whatever it is about ("Dejó la agencia...",
"Trinkt keinen Kaffee mehr", "Trocou o Trello pelo Notion"); two facts about different slots are never one
("Uses Neovim" / "Switched to uv"), and nothing but a fact about the user's name or pronouns replaces one.

Words are compared by their folded spelling with an inflection's ending allowed ("vegetarisch" / "vegetarier"),
so a short fact whose language cannot be told is read as well as a long one. The words are in :mod:`.slot_words`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from .slot_words import (
    CLAUSES,
    CONSUMED,
    CONTEXT,
    CUES,
    FILLER,
    FROM_TO,
    IDENTITY,
    KNOWN_VALUES,
    LEFT_AFTER,
    LEFT_BEHIND,
    NEGATING,
    NEGATING_CONSUMED,
    RENAMES,
    RULE_STARTS,
    SWAPS,
    WEEKDAYS,
)
from .stems import LIGHT
from .supersede_words import (
    ADDITIVE_SIGNALS,
    ARTICLES,
    CHANGE_SIGNALS,
    MONTHS,
    MULTI_VALUED,
    STOPWORDS,
    STRONG_SIGNALS,
)

TEXTS_KEPT = 4096
LEFT_REACH = 3  # words after a "left behind" word (or before a closing one) that it may name
FREE_SLOTS = ("employer", "place", "name", "project")  # slots with values no list holds: read from the words
UPDATE, MERGE, VETO = "update", "merge", "veto"


@dataclass(frozen=True, slots=True)
class Reading:
    """One fact as the slot rules read it."""

    slots: frozenset[str]  # the slots it fills
    values: tuple[tuple[str, frozenset[str]], ...]  # per slot, its values (known values by name; else words)
    words: frozenset[str]  # the words that carry meaning: no filler, signal, light verb
    plain: frozenset[str]  # those words but the slots' cues ("Main editor is Neovim": neovim)
    objects: frozenset[str]  # those words but the first (the predicate: "allergic", "lives") and a many-valued one
    rest: frozenset[str]  # the words that say where or what for its value holds ("on the laptop")
    left: frozenset[str]  # the words and known values it names as left behind or negated
    signals: frozenset[str]  # the change words it says ("now", "switched", "jetzt"...)
    additive: bool  # it adds ("also", "auch", "aussi"...)
    rule: bool  # a standing order ("Never ...", "Always ...", "Niemals ...")

    def value(self, slot: str) -> frozenset[str]:
        return next((values for name, values in self.values if name == slot), frozenset())


@dataclass(frozen=True, slots=True)
class SlotVerdict:
    """What the slots say of a pair: update, merge, veto (never propose), or "" (no opinion), and why."""

    kind: str
    rule: str = ""


NO_OPINION = SlotVerdict("")


def judge_slots(old: str, new: str) -> SlotVerdict:
    """The slots' verdict on an old and a new fact's text."""
    mine, theirs = reading(old), reading(new)
    if mine.slots & IDENTITY and not mine.slots & theirs.slots & IDENTITY:
        return SlotVerdict(VETO, "identity")  # a name or pronouns: only another name or pronouns replaces them
    if theirs.slots & IDENTITY and not mine.slots & theirs.slots and mine.slots:
        return SlotVerdict(VETO, "identity")
    if _left_behind(mine, theirs):
        return SlotVerdict(UPDATE, "left_behind")
    shared = sorted(mine.slots & theirs.slots)
    if mine.rule and theirs.rule and not theirs.signals - mine.signals:
        shared = [slot for slot in shared if slot in KNOWN_VALUES]  # two orders about a repo: two rules
    for slot in shared:
        verdict = _same_slot(slot, mine, theirs)
        if verdict.kind:
            return verdict
    if mine.slots and theirs.slots and not shared:
        return SlotVerdict(VETO, "other_slot")
    if mine.rule and theirs.rule and not theirs.signals - mine.signals:
        return SlotVerdict(VETO, "two_rules")  # "Never force-push to main" / "Never push directly to main"
    return NO_OPINION


def _left_behind(old: Reading, new: Reading) -> bool:
    """The new fact names one of the old fact's values (or, for an old fact of no slot, its words) as left
    behind, and the old fact did not say it negated."""
    named = frozenset().union(*(values for _, values in old.values)) or old.objects
    named = named - old.left
    return any(_alike(word, gone) for word in named for gone in new.left)


def _same_slot(slot: str, old: Reading, new: Reading) -> SlotVerdict:
    mine, theirs = old.value(slot), new.value(slot)
    changed = bool(new.signals - old.signals)  # "now" in both says nothing of either
    if slot == "meeting":
        return _meeting(old, new)
    if not mine or not theirs:
        return NO_OPINION
    gone, came = _without(mine, theirs), _without(theirs, mine)
    if gone and came:
        if new.additive or (slot == "drink" and not changed) or _other_context(old, new, slot):
            return NO_OPINION  # "also likes black coffee", a drink beside another, Windows on a laptop and Linux
        return SlotVerdict(UPDATE, f"slot:{slot}")
    if came and changed and slot in KNOWN_VALUES:
        return SlotVerdict(UPDATE, f"slot:{slot}")  # "nutzt jetzt Neovim" beside the old value it names
    if changed and _without(new.plain, old.plain):
        return NO_OPINION  # "now uses Docker in production": the same value in a new place, not the same fact
    if _without(old.plain, new.plain) and _without(new.plain, old.plain) and not _paraphrase(old, new):
        return NO_OPINION  # the same value, and each says something the other does not ("... for Rust")
    return SlotVerdict(MERGE, f"same:{slot}")


def in_context(frame: tuple[str, ...], start: int) -> bool:
    """"dark mode in the terminal" -> "... in the browser": the changed words say where the value holds (a
    preposition after the fact's object), not the value. "Lives in Queens" keeps its slot right after the verb."""
    before = [index for index in range(start - 1, -1, -1) if frame[index] not in ARTICLES][:1]
    return bool(before) and frame[before[0]] in CONTEXT and before[0] >= 2 and any(
        word not in STOPWORDS for word in frame[1:before[0]])


def _other_context(old: Reading, new: Reading, slot: str) -> bool:
    """Each fact says where its value holds, and not the same place ("Windows on the laptop" / "Linux on the home
    server"): two values of one slot side by side. Free slots' values are their words: no context to tell."""
    return slot in KNOWN_VALUES and bool(old.rest) and bool(new.rest) and not any(
        _alike(one, other) for one in old.rest for other in new.rest)


def _meeting(old: Reading, new: Reading) -> SlotVerdict:
    """Two facts about one meeting (they share a word of its name, or one names none) at two times."""
    times_old, times_new = old.value("meeting"), new.value("meeting")
    names_old, names_new = old.words - times_old, new.words - times_new
    if not times_old or not times_new or _without(times_old, times_new) == frozenset():
        return NO_OPINION
    same = not names_old or not names_new or any(_alike(one, other) for one in names_old for other in names_new)
    return SlotVerdict(UPDATE, "slot:meeting") if same and not new.additive else NO_OPINION


def _paraphrase(old: Reading, new: Reading) -> bool:
    """One says all the other says, but for words of the slot's own vocabulary ("main", "editor", "is")."""
    shorter, fuller = sorted((old.plain, new.plain), key=len)
    return not _without(shorter, fuller)


def paraphrase(one: str, other: str) -> bool:
    """Whether every meaningful word of the shorter text has its like in the fuller one, neither naming a value
    left behind: "Answers tersely." / "Keep answers terse, no recap." (inflections and languages aside)."""
    mine, theirs = reading(one), reading(other)
    if not mine.words or not theirs.words or mine.signals != theirs.signals:
        return False
    shorter, fuller = sorted((mine.words - mine.left, theirs.words - theirs.left), key=len)
    return len(shorter) >= 2 and not _without(shorter, fuller) and not (mine.left & theirs.words or
                                                                         theirs.left & mine.words)


def _without(these: frozenset[str], those: frozenset[str]) -> frozenset[str]:
    """The words of ``these`` with no like among ``those``."""
    return frozenset(word for word in these if not any(_alike(word, other) for other in those))


@cache
def _alike(one: str, other: str) -> bool:
    """One word in two inflections: a shared start of four letters or more, at most three letters apart
    ("vegetarisch" / "vegetarier", "tersely" / "terse", "respuestas" / "respuesta")."""
    if one == other:
        return True
    common = 0
    for mine, theirs in zip(one, other, strict=False):
        if mine != theirs:
            break
        common += 1
    return common >= 4 and max(len(one), len(other)) - common <= 3


@lru_cache(maxsize=TEXTS_KEPT)
def reading(text: str) -> Reading:
    """A fact's slots, values and left-behind words, read once per text."""
    folded = _folded(text)
    known = _known(folded)
    left = _left(folded)
    words = _meaningful(folded)
    slots = {slot for slot, _ in known} | {slot for slot, cue in CUES.items() if _cue(cue).search(folded)}
    if "project" in slots:
        slots.discard("name")  # "the project is called helios": the project's name, not the user's
    values: dict[str, set[str]] = {}
    for slot, value in known:
        values.setdefault(slot, set()).add(value)
    negated = frozenset(value for slot, value in known if _negated(folded, value, slot))
    values = _diet(values, negated)
    free = _free(folded)
    for slot in slots:
        if slot in FREE_SLOTS and slot not in values:
            values[slot] = set(free)
    if "meeting" in slots:
        values["meeting"] = {word for word in _tokens(folded) if any(c.isdigit() for c in word) or word in WEEKDAYS}
    filled = {slot: frozenset(found) for slot, found in values.items() if found}
    left |= {value for slot, spelled, value in _spellings() if all(word in left for word in spelled.split())}
    return Reading(frozenset(filled), tuple(sorted(filled.items())), words, _uncued(folded), _objects(folded),
                   _context(folded),
                   left | negated, _signals(folded),
                   _said(folded, ADDITIVE_SIGNALS), _phrase_set(RULE_STARTS).match(folded) is not None)


@cache
def _spellings() -> tuple[tuple[str, str, str], ...]:
    return tuple((slot, spelled, value) for slot, spellings in KNOWN_VALUES.items()
                 for spelled, value in spellings.items())


def _known_words(known: tuple[tuple[str, str], ...]) -> frozenset[str]:
    """The words that spell the known values found: "vs", "code" for vscode."""
    found = set(known)
    return frozenset(word for slot, spelled, value in _spellings() if (slot, value) in found
                     for word in spelled.split())


def _context(folded: str) -> frozenset[str]:
    """The words after "in", "on", "for"...: where or what for the fact holds, known values aside."""
    found = _after_words(folded, CONTEXT, 2)
    return frozenset(word for word in found if _carries(word) and word not in _all_known_words())


def _objects(folded: str) -> frozenset[str]:
    """The meaningful words after the first, many-valued predicates aside: what "no longer" may name of a fact of
    no slot ("Is allergic to peanuts": peanuts, not "allergic", which "no longer allergic to pollen" ends)."""
    plain = _phrase_set((*CHANGE_SIGNALS, *STRONG_SIGNALS, *ADDITIVE_SIGNALS)).sub(" ", folded)
    ordered = [word for word in _tokens(plain) if _carries(word)]
    return frozenset(word for word in ordered[1:] if word not in MULTI_VALUED)


def _diet(values: dict[str, set[str]], negated: frozenset[str]) -> dict[str, set[str]]:
    """"Eats no meat" is a vegetarian's diet; a negated diet value is no value of the fact's."""
    diet = values.get("diet")
    if not diet:
        return values
    kept = {value for value in diet if value not in negated}
    if not kept and "meat" in diet:
        kept = {"vegetarian"}
    return {**values, "diet": kept} if kept else {slot: found for slot, found in values.items() if slot != "diet"}


def _folded(text: str) -> str:
    folded = text.casefold().replace("’", "'")
    return re.sub(r"(?<!\w)([nljdmsct]|qu)'", r"\1 ", folded)


def _tokens(text: str) -> list[str]:
    return [word for word in (token.strip(".:-,;!?'\"()") for token in re.findall(r"[\w@+#./:'-]+", text)) if word]


def _known(folded: str) -> tuple[tuple[str, str], ...]:
    """(slot, value) of every known value the text names."""
    return tuple((slot, value) for slot, spellings in KNOWN_VALUES.items()
                 for spelled, value in spellings.items() if _phrase(spelled).search(folded))


def _negated(folded: str, value: str, slot: str) -> bool:
    """Whether the text negates the known ``value`` ("no meat", "keinen Kaffee mehr")."""
    spelled = [spelling for spelling, named in KNOWN_VALUES[slot].items() if named == value]
    left = _left(folded)
    return any(word in left for spelling in spelled for word in spelling.split()) or any(
        re.search(_phrase(negation).pattern + r"\s+(?:\w+\s+)?" + _phrase(spelling).pattern, folded)
        for negation in (NEGATING_CONSUMED if slot in CONSUMED else NEGATING) for spelling in spelled)


@lru_cache(maxsize=TEXTS_KEPT)
def _left(folded: str) -> frozenset[str]:
    """The words the text names as left behind: after "instead of", "left", "no longer"..., before a closing
    "mehr", "anymore", "plus"..., between "from" and "to", and a rename's old name."""
    found: set[str] = set()
    for clause in re.split(CLAUSES, folded):
        found |= _after_words(clause, LEFT_BEHIND, LEFT_REACH) | _before_words(clause, LEFT_AFTER)
        found |= _from_to(clause, FROM_TO[0]) | _from_to(clause, RENAMES) | _from_to(clause, SWAPS)
    return frozenset(word for word in found if _carries(word))


def _after_words(clause: str, leads: tuple[str, ...], reach: int) -> set[str]:
    return {word for hit in _gapped(leads).finditer(clause)
            for word in [w for w in _tokens(clause[hit.end():]) if w not in ARTICLES][:reach]}


def _before_words(clause: str, closing: tuple[str, ...]) -> set[str]:
    return {word for hit in _phrase_set(closing).finditer(clause)
            for word in _tokens(clause[:hit.start()])[-LEFT_REACH:]}


def _from_to(clause: str, leads: tuple[str, ...]) -> set[str]:
    """The words between one of ``leads`` and a later "to" word: "from Jira to Linear", "renamed X to Y"."""
    found: set[str] = set()
    for hit in _phrase_set(leads).finditer(clause):
        after = _tokens(clause[hit.end():])
        end = next((index for index, word in enumerate(after) if word in FROM_TO[1]), None)
        if end is not None and 0 < end <= LEFT_REACH:
            found |= set(after[:end])
    return found


def _free(folded: str) -> frozenset[str]:
    """The words a slot without a list of values may take: the meaningful words but the slots' cues."""
    return frozenset(word for word in _uncued(folded) if word not in WEEKDAYS) - _all_known_words()


@lru_cache(maxsize=TEXTS_KEPT)
def _uncued(folded: str) -> frozenset[str]:
    """The meaningful words but those of the slots' cues."""
    plain = folded
    for cue in CUES.values():
        plain = _cue(cue).sub(" ", plain)
    return _meaningful(plain)


@cache
def _all_known_words() -> frozenset[str]:
    return frozenset(word for _, spelled, _ in _spellings() for word in spelled.split())


@lru_cache(maxsize=TEXTS_KEPT)
def _meaningful(folded: str) -> frozenset[str]:
    plain = _phrase_set((*CHANGE_SIGNALS, *STRONG_SIGNALS, *ADDITIVE_SIGNALS)).sub(" ", folded)
    words = _tokens(plain)
    parts = [part for word in words if "-" in word for part in word.split("-")]  # "München-Schwabing"
    return frozenset(word for word in words + parts if _carries(word))


def _carries(word: str) -> bool:
    return (word not in STOPWORDS and word not in FILLER and word not in MONTHS and len(word) > 1
            and not any(word.startswith(verb) for verb in LIGHT if len(verb) > 3) and not _light(word)
            and word not in CONTEXT)


def _light(word: str) -> bool:
    """"uses", "used", "using", "likes": a light verb (:data:`.stems.LIGHT`) in English inflections."""
    return any(word == verb or word in (verb + "s", verb + "d", verb + "es", verb + "ed", verb + "ing", verb[:-1] +
                                        "ing") for verb in LIGHT)


def _signals(folded: str) -> frozenset[str]:
    return frozenset(" ".join(hit.split()) for hit in _phrase_set((*CHANGE_SIGNALS, *STRONG_SIGNALS)).findall(folded))


def _said(folded: str, phrases: tuple[str, ...]) -> bool:
    return _phrase_set(phrases).search(folded) is not None


@cache
def _cue(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + pattern + r")(?!\w)")


@cache
def _phrase(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w+])" + re.escape(phrase).replace(r"\ ", r"\s+") + r"(?![\w+])")


@cache
def _phrase_set(phrases: tuple[str, ...]) -> re.Pattern[str]:
    spelled = sorted((re.escape(p).replace(r"\ ", r"\s+") for p in phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)")


@cache
def _gapped(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """As :func:`_phrase_set`, a phrase of two words or more letting one word in ("ne boit plus", "não usa mais")."""
    spelled = sorted((re.escape(p).replace(r"\ ", r"\s+(?:\w+\s+)?") for p in phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)")
