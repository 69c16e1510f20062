"""A fact's text as the slot rules (:mod:`.slots`) read it: the slots it fills, their values, the words it names
as left behind, its change words; read once per text (a write's text is judged against each of its candidates)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import caches
from . import phrase_patterns
from .slot_words import (
    CLAUSES,
    CONSUMED,
    CONTEXT,
    CUED_ONLY,
    CUES,
    FILLER,
    FROM_TO,
    KNOWN_VALUES,
    LEFT_AFTER,
    LEFT_BEHIND,
    LOCATIVE,
    NEGATING,
    NEGATING_CONSUMED,
    RENAMES,
    RULE_STARTS,
    SPHERES,
    SWAPS,
    TIME_ZONES,
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
NAME_REACH = 3  # words after a name cue that are the name ("name is Dana Okafor")
COPULAS = frozenset({"is", "am", "was", "ist", "war", "est", "es", "é", "è"})  # "my name is Dana": not the name
LEFT_REACH = 3  # words after a "left behind" word (or before a closing one) that it may name
FREE_SLOTS = ("employer", "place", "name", "project")  # slots with values no list holds: read from the words


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
    spheres: frozenset[str] = frozenset()  # where its value holds: "work", "home" ("Work laptop runs Windows")
    days: frozenset[str] = frozenset()  # the weekdays it names ("Montags im Büro")

    def value(self, slot: str) -> frozenset[str]:
        return next((values for name, values in self.values if name == slot), frozenset())


@caches.memo("slot_reading.reading", owner="process", key="a fact's text", bound=TEXTS_KEPT,
              holds_text=True)
def reading(text: str) -> Reading:
    """A fact's slots, values and left-behind words, read once per text."""
    folded = _folded(text)
    filled, negated = _filled(folded)
    left = _left(folded)
    left |= _values_among(left)
    return Reading(frozenset(filled), tuple(sorted(filled.items())), _meaningful(folded), _uncued(folded),
                   _objects(folded), _context(folded),
                   left | negated, _signals(folded),
                   _said(folded, ADDITIVE_SIGNALS), _phrase_set(RULE_STARTS, folded).match(folded) is not None,
                   _spheres(folded), frozenset(_tokens(folded)) & WEEKDAYS)


def filled_slots(text: str) -> frozenset[str]:
    """The slots a fact fills, as :func:`reading` has them, without the rest of its reading: what the proposal
    index keys a fact by (an import indexes every fact it adds, and judges few or none)."""
    return frozenset(_filled(_folded(text))[0])


def _filled(folded: str) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """The slots the text fills with their values, and the known values it negates."""
    known = _known(folded)
    cued = {str(hit.lastgroup) for hit in _cues(folded).finditer(folded)}
    known = tuple((slot, value) for slot, value in known if slot not in CUED_ONLY or slot in cued)
    name = _name_words(folded) if "name" in cued else frozenset()
    known = _outside(known, name)  # "Name is Zed Quinn" names no editor
    if any(slot in CUED_ONLY for slot, _ in known):  # "switched the shell to fish": not a diet
        known = tuple((slot, value) for slot, value in known if slot != "diet")
    slots = {slot for slot, _ in known} | cued
    if "project" in slots:  # "the project is called helios": the project's name, not the user's; and a project
        if "name" not in slots and not _said(folded, RENAMES):  # fact that names no name is about something else
            slots.discard("project")  # ("Project Atlas uses Go" / "... deploys on Fridays": two facts of it)
        slots.discard("name")
    values: dict[str, set[str]] = {}
    for slot, value in known:
        values.setdefault(slot, set()).add(value)
    negated = frozenset(value for slot, value in known if _negated(folded, value, slot))
    values = _diet(values, negated)
    if name:
        values["name"] = set(name)
    for slot in slots:
        if slot in FREE_SLOTS and slot not in values:
            free = _free(folded)
            values[slot] = set(free if slot != "place" or _said(folded, TIME_ZONES) else free & _located(folded))
    if "meeting" in slots:
        values["meeting"] = {word for word in _tokens(folded) if any(c.isdigit() for c in word) or word in WEEKDAYS}
    return {slot: frozenset(found) for slot, found in values.items() if found}, negated


def _spheres(folded: str) -> frozenset[str]:
    """The spheres (:data:`.slot_words.SPHERES`) the text says its value holds in."""
    return frozenset(str(hit.lastgroup) for hit in _sphere_pattern(folded).finditer(folded))


def _sphere_pattern(folded: str) -> re.Pattern[str]:
    return phrase_patterns.for_text(_sphere_list(), folded)


@caches.memo("slot_reading._sphere_list", owner="process", key="none: the word lists, read once", bound=1)
def _sphere_list() -> phrase_patterns.Alternation:
    return phrase_patterns.named(SPHERES)


@caches.memo("slot_reading._spellings", owner="process", key="none: the word lists, read once", bound=1)
def _spellings() -> tuple[tuple[str, str, str], ...]:
    return tuple((slot, spelled, value) for slot, spellings in KNOWN_VALUES.items()
                 for spelled, value in spellings.items())


def _values_among(words: frozenset[str]) -> frozenset[str]:
    """The known values the words spell ("vs", "code": vscode)."""
    by_first = _by_first_word()
    return frozenset(value for word in words for spelled, value in by_first.get(word, ())
                     if all(part in words for part in spelled.split()))


def spelling_words(words: frozenset[str]) -> frozenset[str]:
    """The words among ``words`` that spell a known value of two words or more ("vs", "code" of vscode)."""
    by_first = _by_first_word()
    return frozenset(part for word in words for spelled, _ in by_first.get(word, ()) if " " in spelled
                     and all(part in words for part in spelled.split()) for part in spelled.split())


@caches.memo("slot_reading._by_first_word", owner="process", key="none: the word lists, read once", bound=1)
def _by_first_word() -> dict[str, tuple[tuple[str, str], ...]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for _, spelled, value in _spellings():
        found.setdefault(spelled.split()[0], []).append((spelled, value))
    return {word: tuple(pairs) for word, pairs in found.items()}


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
    ordered = [word for word in _tokens(_unsignalled(folded)) if _carries(word)]
    return frozenset(word for word in ordered[1:] if word not in MULTI_VALUED)


def _located(folded: str) -> frozenset[str]:
    """The words a place is named by: after "in", "to", "nach", "à", "em"..., or a label's colon ("City: Cork")
    ("Lives with two cats" names none)."""
    found = _after_words(folded, LOCATIVE, 2) | set(_tokens(folded.partition(":")[2])[:2])
    return frozenset(found | {part for word in found for part in word.split("-")})  # "München-Schwabing"


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


def _name_words(folded: str) -> frozenset[str]:
    """The words a name cue gives the user's name ("name is Zed Quinn", "goes by Vim"), to its clause's end."""
    found: set[str] = set()
    for hit in _cues(folded).finditer(folded):
        if hit.lastgroup == "name":
            clause = re.split(r"[;,.!?()]|\s(?:-|and|but|und|et|y|e)\s", folded[hit.end():], maxsplit=1)[0]
            words = [word for word in _tokens(clause) if word not in ARTICLES]
            found.update((words[1:] if words and words[0] in COPULAS else words)[:NAME_REACH])
    return frozenset(found)


def _outside(known: tuple[tuple[str, str], ...], words: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """The known values but those spelled by ``words`` alone (a name's words are no tool, place or diet)."""
    if not words:
        return known
    inside = {(slot, value) for slot, spelled, value in _spellings() if set(spelled.split()) <= words}
    return tuple(pair for pair in known if pair not in inside)


def _known(folded: str) -> tuple[tuple[str, str], ...]:
    """(slot, value) of every known value the text names, in one pass of one pattern."""
    named = _named()
    return tuple(sorted({pair for hit in _known_pattern(folded).finditer(folded)
                         for pair in named[" ".join(hit[0].split())]}))


@caches.memo("slot_reading._named", owner="process", key="none: the word lists, read once", bound=1)
def _named() -> dict[str, tuple[tuple[str, str], ...]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for slot, spelled, value in _spellings():
        found.setdefault(spelled, []).append((slot, value))
    return {spelled: tuple(pairs) for spelled, pairs in found.items()}


def _known_pattern(folded: str) -> re.Pattern[str]:
    return phrase_patterns.for_text(_known_list(), folded)


@caches.memo("slot_reading._known_list", owner="process", key="none: the word lists, read once", bound=1)
def _known_list() -> phrase_patterns.Alternation:
    spelled = sorted(((re.escape(p).replace(r"\ ", r"\s+"), p) for p in _named()), key=lambda pair: len(pair[0]),
                     reverse=True)
    return phrase_patterns.phrases_of(tuple(spelled), before=r"(?<![\w+])", after=r"(?![\w+])")


def _negated(folded: str, value: str, slot: str) -> bool:
    """Whether the text negates the known ``value`` ("no meat", "keinen Kaffee mehr")."""
    spelled = [spelling for spelling, named in KNOWN_VALUES[slot].items() if named == value]
    left = _left(folded)
    words = frozenset(phrase_patterns.WORD.findall(folded))  # a pair whose words are not all there is not searched
    return any(word in left for spelling in spelled for word in spelling.split()) or any(
        re.search(_phrase(negation).pattern + r"\s+(?:\w+\s+)?" + _phrase(spelling).pattern, folded)
        for negation in (NEGATING_CONSUMED if slot in CONSUMED else NEGATING) for spelling in spelled
        if words.issuperset(phrase_patterns.WORD.findall(negation + " " + spelling)))


@caches.memo("slot_reading._left", owner="process", key="a fact's folded text", bound=TEXTS_KEPT,
              holds_text=True)
def _left(folded: str) -> frozenset[str]:
    """The words the text names as left behind: after "instead of", "left", "no longer"..., before a closing
    "mehr", "anymore", "plus"..., between "from" and "to", and a rename's old name."""
    if _lead_words().isdisjoint(_tokens(folded)):
        return frozenset()  # most facts hold none of the words that leave a value behind: no pattern is run
    found: set[str] = set()
    for clause in re.split(CLAUSES, folded):
        found |= _after_words(clause, LEFT_BEHIND, LEFT_REACH) | _before_words(clause, LEFT_AFTER)
        found |= _from_to(clause, FROM_TO[0]) | _from_to(clause, RENAMES) | _from_to(clause, SWAPS)
    return frozenset(word for word in found if _carries(word))


@caches.memo("slot_reading._lead_words", owner="process", key="none: the word lists, read once", bound=1)
def _lead_words() -> frozenset[str]:
    """Every word a left-behind phrase starts or ends with (a gapped one's first word is enough)."""
    phrases = (*LEFT_BEHIND, *LEFT_AFTER, *FROM_TO[0], *RENAMES, *SWAPS)
    return frozenset(word for phrase in phrases for word in (phrase.split()[0], phrase.split()[-1]))


def _after_words(clause: str, leads: tuple[str, ...], reach: int) -> set[str]:
    return {word for hit in _gapped(leads, clause).finditer(clause)
            for word in [w for w in _tokens(clause[hit.end():]) if w not in ARTICLES][:reach]}


def _before_words(clause: str, closing: tuple[str, ...]) -> set[str]:
    return {word for hit in _phrase_set(closing, clause).finditer(clause)
            for word in _tokens(clause[:hit.start()])[-LEFT_REACH:]}


def _from_to(clause: str, leads: tuple[str, ...]) -> set[str]:
    """The words between one of ``leads`` and a later "to" word: "from Jira to Linear", "renamed X to Y"."""
    found: set[str] = set()
    for hit in _phrase_set(leads, clause).finditer(clause):
        after = _tokens(clause[hit.end():])
        end = next((index for index, word in enumerate(after) if word in FROM_TO[1]), None)
        if end is not None and 0 < end <= LEFT_REACH:
            found |= set(after[:end])
    return found


def _free(folded: str) -> frozenset[str]:
    """The words a slot without a list of values may take: the meaningful words but the slots' cues."""
    return frozenset(word for word in _uncued(folded) if word not in WEEKDAYS) - _all_known_words()


@caches.memo("slot_reading._uncued", owner="process", key="a fact's folded text", bound=TEXTS_KEPT,
              holds_text=True)
def _uncued(folded: str) -> frozenset[str]:
    """The meaningful words but those of the slots' cues."""
    return _meaningful(_cues(folded).sub(" ", folded))


@caches.memo("slot_reading._all_known_words", owner="process", key="none: the word lists, read once", bound=1)
def _all_known_words() -> frozenset[str]:
    return frozenset(word for _, spelled, _ in _spellings() for word in spelled.split())


@caches.memo("slot_reading._unsignalled", owner="process", key="a fact's folded text", bound=TEXTS_KEPT,
              holds_text=True)
def _unsignalled(folded: str) -> str:
    """The text with its change and addition words taken out."""
    return _phrase_set((*CHANGE_SIGNALS, *STRONG_SIGNALS, *ADDITIVE_SIGNALS), folded).sub(" ", folded)


@caches.memo("slot_reading._meaningful", owner="process", key="a fact's folded text", bound=TEXTS_KEPT,
              holds_text=True)
def _meaningful(folded: str) -> frozenset[str]:
    words = _tokens(_unsignalled(folded))
    parts = [part for word in words if "-" in word for part in word.split("-")]  # "München-Schwabing"
    return frozenset(word for word in words + parts if _carries(word))


@caches.memo("slot_reading._carries", owner="process", key="a word of a fact", bound=TEXTS_KEPT,
              holds_text=True)
def _carries(word: str) -> bool:
    return (word not in STOPWORDS and word not in FILLER and word not in _months() and len(word) > 1
            and not word.startswith(_long_light()) and word not in _light_forms() and word not in CONTEXT)


@caches.memo("slot_reading._months", owner="process", key="none: the word lists, read once", bound=1)
def _months() -> frozenset[str]:
    return frozenset(MONTHS)


@caches.memo("slot_reading._long_light", owner="process", key="none: the word lists, read once", bound=1)
def _long_light() -> tuple[str, ...]:
    return tuple(verb for verb in LIGHT if len(verb) > 3)


@caches.memo("slot_reading._light_forms", owner="process", key="none: the word lists, read once", bound=1)
def _light_forms() -> frozenset[str]:
    """"uses", "used", "using", "likes": the light verbs (:data:`.stems.LIGHT`) in English inflections."""
    return frozenset(form for verb in LIGHT for form in (verb, verb + "s", verb + "d", verb + "es", verb + "ed",
                                                         verb + "ing", verb[:-1] + "ing"))


def _signals(folded: str) -> frozenset[str]:
    found = _phrase_set((*CHANGE_SIGNALS, *STRONG_SIGNALS), folded).findall(folded)
    return frozenset(" ".join(hit.split()) for hit in found)


def _said(folded: str, phrases: tuple[str, ...]) -> bool:
    return _phrase_set(phrases, folded).search(folded) is not None


def _cues(folded: str) -> re.Pattern[str]:
    """Every slot's cues as one pattern, a named group per slot (one pass per text, not one per slot)."""
    return phrase_patterns.for_text(_cue_list(), folded)


@caches.memo("slot_reading._cue_list", owner="process", key="none: the word lists, read once", bound=1)
def _cue_list() -> phrase_patterns.Alternation:
    return phrase_patterns.named(CUES)


@caches.memo("slot_reading._phrase", owner="process", key="a phrase of the word lists", bound=1024)
def _phrase(phrase: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w+])" + re.escape(phrase).replace(r"\ ", r"\s+") + r"(?![\w+])")


def _phrase_set(phrases: tuple[str, ...], text: str) -> re.Pattern[str]:
    """The phrases as one pattern, longest first, of those ``text`` can hold (:mod:`.phrase_patterns`)."""
    return phrase_patterns.for_text(phrase_patterns.listed(phrases), text)


def _gapped(phrases: tuple[str, ...], text: str) -> re.Pattern[str]:
    """As :func:`_phrase_set`, a phrase of two words or more letting one word in ("ne boit plus", "não usa mais")."""
    return phrase_patterns.for_text(phrase_patterns.listed(phrases, phrase_patterns.GAPPED), text)
