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

from .. import caches
from .slot_reading import Reading, reading, spelling_words
from .slot_words import (
    CONTEXT,
    IDENTITY,
    KNOWN_VALUES,
    RENAMES,
    SPHERE_VALUED,
    STYLE_CUES,
    TOPICS,
)
from .supersede_words import (
    ARTICLES,
    STOPWORDS,
)

UPDATE, MERGE, VETO = "update", "merge", "veto"
RENAMED = frozenset(RENAMES)  # a rename's words, as a fact's words are read


@dataclass(frozen=True, slots=True)
class SlotVerdict:
    """What the slots say of a pair: update, merge, veto (never propose), or "" (no opinion), and why."""

    kind: str
    rule: str = ""


NO_OPINION = SlotVerdict("")


def judge_slots(old: str, new: str) -> SlotVerdict:
    """The slots' verdict on an old and a new fact's text."""
    mine, theirs = reading(old), reading(new)
    if mine.slots & IDENTITY and not mine.slots - IDENTITY and not mine.slots & theirs.slots & IDENTITY:
        # The user's name or pronouns: only another name or pronouns replaces them. A name beside another slot is
        # that thing's ("The project is called Helios": a project renamed is a change).
        return SlotVerdict(VETO, "identity")
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


def topic_for(content: str) -> str | None:
    """The topic a fact that came without one reads as (:data:`.slot_words.TOPICS`: a name is identity, where the
    user lives location, an editor tools; how to answer style), or None when its words tell none."""
    slots = reading(content.casefold()).slots
    named = next((topic for slot, topic in TOPICS if slot in slots), None)
    return named or ("style" if re.search(rf"(?<!\w)(?:{STYLE_CUES})(?!\w)", content.casefold()) else None)


def one_list(old: str, new: str) -> bool:
    """Both (case-folded) are items under one label ("Stack: Python" / "Stack: Postgres"), each naming another
    item; the caller asks only where no slot that holds one value changed ("Editor: Emacs" / "Editor: Helix")."""
    label, _, item = old.partition(":")
    other_label, _, other_item = new.partition(":")
    return bool(item.strip()) and label.strip() == other_label.strip() and 0 < len(label.split()) <= 3 \
        and item.strip(" .") != other_item.strip(" .")


def slot_of_its_own(old: str, new: str) -> bool:
    """Whether the new fact fills a slot the old one does not speak of: a change signal there changes that slot,
    not the old fact ("Moved to Porto last month" / "Cycles to the office")."""
    return bool(reading(new).slots) and not reading(old).slots


def closeness(one: str, other: str) -> int:
    """How close two facts are: the slots they share (each worth two) and their meaningful words alike."""
    mine, theirs = reading(one.casefold()), reading(other.casefold())
    return 2 * len(mine.slots & theirs.slots) + len(mine.words) - len(_without(mine.words, theirs.words))


def _left_behind(old: Reading, new: Reading) -> bool:
    """The new fact names one of the old fact's values (or, for an old fact of no slot, its words) as left
    behind, and the old fact did not say it negated."""
    values = frozenset().union(*(values for _, values in old.values))
    named = (values or old.objects) - old.left
    left = new.left if values else new.left - spelling_words(new.left)  # "from VS Code": not any "code"
    return any(_alike(word, gone) for word in named for gone in left)


def _same_slot(slot: str, old: Reading, new: Reading) -> SlotVerdict:
    mine, theirs = old.value(slot), new.value(slot)
    changed = bool(new.signals - old.signals)  # "now" in both says nothing of either
    if slot == "meeting":
        return _meeting(old, new)
    if _qualified_apart(slot, old, new):
        return SlotVerdict(VETO, "qualifier")  # "Work laptop runs Windows" / "Home laptop runs Linux": two slots
    if not mine or not theirs:
        return NO_OPINION
    gone, came = _without(mine, theirs), _without(theirs, mine)
    if old.left & theirs and not new.left & theirs:
        return SlotVerdict(UPDATE, f"slot:{slot}")  # "Doesn't drink coffee" / "Drinks coffee again"
    if gone and came:
        if new.additive or (slot == "drink" and not changed) or _other_context(old, new, slot):
            return NO_OPINION  # "also likes black coffee", a drink beside another, Windows on a laptop and Linux
        return SlotVerdict(UPDATE, f"slot:{slot}")
    if came and changed and slot in KNOWN_VALUES:
        return SlotVerdict(UPDATE, f"slot:{slot}")  # "nutzt jetzt Neovim" beside the old value it names
    if came and slot in KNOWN_VALUES:
        return SlotVerdict(VETO, "more_values")  # "Uses Windows and Linux": one value more, not the same fact
    if changed and _without(new.plain, old.plain):
        return NO_OPINION  # "now uses Docker in production": the same value in a new place, not the same fact
    if came and new.words & RENAMED:
        return SlotVerdict(UPDATE, f"slot:{slot}")  # "Gabbiano è stato rinominato in Albatros": a name more, renamed
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


def _qualified_apart(slot: str, old: Reading, new: Reading) -> bool:
    """Each fact says where (work, home) or on which days its value holds, and not the same: a slot each."""
    spheres = slot not in SPHERE_VALUED and bool(old.spheres) and bool(new.spheres) and not old.spheres & new.spheres
    days = bool(old.days) and bool(new.days) and not any(_alike(one, other) for one in old.days for other in new.days)
    return spheres or days


def _meeting(old: Reading, new: Reading) -> SlotVerdict:
    """Two facts about one meeting (they share a word of its name, or one names none) at two times."""
    times_old, times_new = old.value("meeting"), new.value("meeting")
    names_old, names_new = old.words - times_old, new.words - times_new
    if not times_old or not times_new or _without(times_old, times_new) == frozenset():
        return NO_OPINION
    same = not names_old or not names_new or any(_alike(one, other) for one in names_old for other in names_new)
    if same and not new.signals - old.signals and _without(names_old, names_new) and _without(names_new, names_old):
        return SlotVerdict(VETO, "two_meetings")  # each names its meeting with a word of its own, and no change
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


@caches.memo("slots._alike", owner="process", key="two values of a slot, as facts word them", bound=4096,
              holds_text=True)
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
