"""Proposals without a model: may a new fact update an older one of the same topic?

Word rules cannot know meaning, so they only *propose*: the writer (a person at `persona review`, or the host's
model reading a write's answer) decides, with `persona replace` or an accepted proposal. A proposal costs a line; a
miss costs a stale fact; a proposal among facts that are all true is noise. A pair is proposed when none of these
holds: the two facts are about different people ("Her mother now lives in Munich" / "Lives in Berlin"); the new
fact only says the old one again, adds to it ("also", "auch", "aussi"...), rewords or refines it; both hold a
predicate of many values ("dislikes", "allergic to", "speaks") about different things; and one of these does:

- the new fact names the old value as left behind: "from X to Y", "instead of X", "..., not X", "was X",
  "stopped X", "keinen X mehr", or says the whole old fact no longer holds - the *explicit* rules;
- both fill the same slot (:mod:`.slots`: the editor, the employer, where the user lives, the diet, a meeting's
  time, a name...) with another value; two facts of two slots are never one change, and nothing but a name or
  pronouns replaces a fact about the user's name or pronouns (issue 50);
- the two texts describe the same frame and differ in one slot: at most one old word (two, after "switched to")
  replaced by at most two new ones, the verb kept, and the slot not what the value is for ("vim for Python" /
  "vim for Rust") nor where it holds ("dark mode in the terminal" / "... in the browser");
- the new fact signals a change the old one does not (issue 38): after a change word, the old predicate kept
  with another value; after a strong signal (a move, a switch, an end, a dated new state), the same topic.

Two facts that say the same thing, one perhaps with more, are a *merge* (:mod:`.near_duplicates`, or one slot's
same value, or a paraphrase), not an update. The figures are printed by ``make bench`` (tests/data/supersede_*.yaml,
and issue 50's pair files: benchmarks/pairs.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import caches
from . import phrase_patterns
from .concepts import same_concepts
from .near_duplicates import near_duplicate
from .slots import MERGE as SLOT_MERGE
from .slots import UPDATE as SLOT_UPDATE
from .slots import VETO, in_context, judge_slots, one_list, paraphrase, slot_of_its_own
from .stems import content_stems, head, language, meaningful, pair_language
from .supersede_words import (
    ADDITIVE_SIGNALS,
    ARTICLES,
    CHANGE_SIGNALS,
    COPULAS,
    DATED,
    FIRST_PERSON,
    FROM_WORDS,
    INSTEAD_OF,
    LEADING,
    MULTI_VALUED,
    NEGATIONS,
    NOT,
    PAST,
    POSSESSIVES,
    PURPOSE,
    RELATIONS,
    STOPWORDS,
    STRONG_SIGNALS,
    TEAMS,
    THING_OF,
    TO_WORDS,
    VERB_SIGNALS,
)
from .verdict import MERGE
from .verdict import Verdict as Verdict  # re-exported: what the rules answer
from .word_diff import changes, prefix_length

TEXTS_KEPT = 4096  # texts whose single-text readings stay cached (each a few words' worth)
MAX_DIFFERENT = 2  # one slot's new value: at most two words ("Travis" -> "GitHub Actions")
MIN_SHARED_SHARE = 0.5  # of the old fact's content words
STOP_VERBS = ("stopped", "quit", "left", "gave up", "a quitté", "quitté", "arrêté", "dejó", "abandonó", "smesso",
              "lasciato", "deixou", "parou", "saiu de")
STOP_AFTER = ("verlassen", "aufgegeben", "aufgehört")  # German puts the verb last: "hat Siemens verlassen"
# Subjects worded too differently for the frame test: (read at the start of the fact, read anywhere).
SUBJECTS = {
    "residence": (r"^(?:lives?|wohnt|wohne|habite|vit|vis|vive|vivo|mora|moro|abita|abito|resides?)\b",
                  r"\b(?:mov(?:ed|ing) to|relocated to|umgezogen|gezogen|déménag\w*|(?:se |me )?mud(?:ó|é|ou|ei|"
                  r"amos|aron|aram|ar|ando)(?:-se)? (?:a|para|pra|pro|en|em)|trasferit[oa])(?!\w)"),
    "employer": (r"^(?:works?|arbeitet|arbeite|travaille|trabaja|trabajo|lavora|lavoro|trabalha|trabalho)\s+"
                 r"(?:at|for|bei|für|chez|pour|en|para|in|per|presso|na|no|em)\b", r"\bjoined\b"),
    "diet": (r"^(?:an? |eine? |une? )?(?:strict |strikte )?(?:vegetari|vegan|végétari|végan|pescatari|pescetari|"
             r"pescétari|flexitari)", r"$^"),
    "address": (r"$^", r"\b(?:address|adresse|dirección|indirizzo|endereço)\b"),
}
MEETING = re.compile(r"\b(?:meeting|stand-?up|teammeeting|réunion|reunión|riunione|reunião|besprechung)\b.*\d")


NO = Verdict(False)


@dataclass(frozen=True, slots=True)
class Text:
    """A fact's text as the rules read it."""

    folded: str  # case-folded, French elision undone
    tokens: tuple[str, ...]  # every word, in order
    words: tuple[str, ...]  # the content words: signals and filler taken out, a plural -s folded
    frame: tuple[str, ...]  # every word but the signals, a plural -s folded: what the frame test compares
    lead: str  # the text without signals and a leading pronoun or copula, where a subject kind is read
    negated: bool  # it says "not", "no longer", "nicht mehr"...: read once per text, as the rest


def judge(old: str, new: str) -> Verdict:
    """Whether the new fact's text may say the old one is no longer true (see the module's rules)."""
    return _judge(read(old), read(new))


def _judge(old: Text, new: Text) -> Verdict:
    if _relations(old) != _relations(new) or (old.words == new.words and old.negated == new.negated):
        return NO  # about someone else, or the same fact said again
    shared = len(set(old.words) & set(new.words))
    slotted = judge_slots(old.folded, new.folded)  # what the two are about decides (issue 50)
    if slotted.kind == VETO and slotted.rule == "identity":
        return NO
    rule = _explicit(old, new) if shared >= MIN_SHARED_SHARE * len(set(old.words)) else ""
    if rule:
        return Verdict(True, shared + 3, rule)
    if slotted.kind != SLOT_UPDATE and one_list(old.folded, new.folded):
        return NO  # "Stack: Python" / "Stack: Redis": two items of one list, both true
    if slotted.kind == VETO:  # two rules said in other words are one ("Always run tests before committing")
        return _said_again(old, new) if slotted.rule == "two_rules" else NO
    if slotted.kind == SLOT_UPDATE and not (slotted.rule.startswith("slot:") and _multi_valued(old, new)):
        return Verdict(True, shared + 2, slotted.rule)
    if slotted.kind == SLOT_MERGE:
        return Verdict(True, shared, slotted.rule, MERGE) if not _ends(new, old) and not _other_purposes(old, new) \
            else NO
    if _has(new.folded, ADDITIVE_SIGNALS):
        return NO
    covers = _covers(new.words, old.words)
    if covers and _ends(old, new):
        return Verdict(True, shared, "stopped")  # every old word is still there, and the new fact ends it
    # "Does not use Docker" / "Uses Docker": not the same
    if (near_duplicate(old.folded, new.folded) or paraphrase(old.folded, new.folded)) and not _ends(new, old):
        return Verdict(True, shared, "near_duplicate", MERGE)  # reworded or refined: keep the fuller
    said_again = _said_again(old, new)
    if said_again.proposes:
        return said_again
    if covers or _multi_valued(old, new):
        return NO
    kind = _same_kind(old, new)
    if kind:
        return Verdict(True, shared + 1, kind)
    framed = _frame(old, new, shared)
    return framed if framed.proposes else _signalled(old, new)


@caches.memo("supersede_rules.read", owner="process", key="a fact's text", bound=TEXTS_KEPT, holds_text=True)
def read(text: str) -> Text:
    """The text's words, signals and filler, once per text."""
    # French elides: "n'utilise plus" is "ne utilise plus" to the signal patterns, "l'italien" is "l italien".
    folded = re.sub(r"(?<!\w)([nljdmsc]|qu)['’]", lambda m: "ne " if m[1] == "n" else m[1] + " ", text.casefold())
    tokens = _words(folded)
    frame = tuple(_stem(word) for word in _words(_pattern(CHANGE_SIGNALS, folded).sub(" ", folded)))
    lead = list(frame)
    while lead and lead[0] in LEADING:
        lead.pop(0)
    return Text(folded, tokens, tuple(word for word in frame if word not in STOPWORDS), frame, " ".join(lead),
                _has(folded, NEGATIONS))


def _words(text: str) -> tuple[str, ...]:
    return tuple(word for word in (token.strip(".:-,;!?'’") for token in re.findall(r"[\w+#.:'’-]+", text)) if word)


def _said_again(old: Text, new: Text) -> Verdict:
    """A merge when the two say the same in other words, negations read alike (:mod:`.concepts`)."""
    return Verdict(True, len(set(old.words) & set(new.words)), "same_concepts", MERGE) \
        if same_concepts(old.folded, new.folded) else NO


@caches.memo("supersede_rules.relations", owner="process", key="a fact's text as read",
             bound=TEXTS_KEPT, holds_text=True)
def _relations(text: Text) -> frozenset[str]:
    """The other people the fact is about: one it opens with ("A irmã dele...", "Her mother...") or names after a
    possessive; "uses Slack with the team" is still the user's fact, "package manager" a tool."""
    tokens = text.tokens
    if tokens[:1] == ("son",) and language(text.folded) == "french":
        tokens = ("sa", *tokens[1:])  # "Son employeur est Airbus": a possessive, not someone's son
    return frozenset(token for index, token in enumerate(tokens) if (token in RELATIONS and (
        index < 2 or (index > 0 and tokens[index - 1] in POSSESSIVES)) and (index == 0 or tokens[index - 1]
                                                                             not in THING_OF)) or (
        token in TEAMS and index > 0 and tokens[index - 1] in POSSESSIVES - FIRST_PERSON))


def _explicit(old: Text, new: Text) -> str:
    """The explicit rule by which the new fact names the old value as left behind, or ""."""
    if old.negated:
        return ""
    values = old.words[1:] or old.words  # after the verb: "allergic" is not what "no longer allergic" ends
    if _names(new.folded, FROM_WORDS, values, gap=1, then=TO_WORDS):
        return "from_to"
    if _names(new.folded, INSTEAD_OF, values, gap=2) or _contrast(new.folded, values):
        return "instead_of"
    if _names(new.folded, PAST, old.words, gap=1) and not _covers(old.words, new.words):
        return "past"
    if _names(new.folded, STOP_VERBS, values, gap=2) or _named_before(new.folded, values, STOP_AFTER):
        return "stopped"
    return ""


def _ends(old: Text, new: Text) -> bool:
    """The new fact negates what the old one said ("No longer meditates"), not something it adds ("Answers
    tersely; no summary"): a negation, then within three words one of the old fact's words, or, closing the
    fact as German does ("Nutzt Docker lokal nicht mehr"), one within three words before it."""
    if old.negated or not new.negated:
        return False
    for found in _pattern(NEGATIONS, new.folded, gapped=True).finditer(new.folded):
        after = _words(re.split(r"[,;.!?]", new.folded[found.end():])[0])
        near = (after[:3] or _words(new.folded[:found.start()])[-3:]) + _words(found[0])[1:]
        if any(_alike(word, other) for word in near for other in old.words):
            return True
    return False


def _names(text: str, leads: tuple[str, ...], values: tuple[str, ...], *, gap: int,
           then: tuple[str, ...] = ()) -> bool:
    """Whether one of ``leads`` is followed, ``gap`` words at most later (an article aside), by one of ``values``
    (and then, further on, by one of ``then``)."""
    for following in _after(text, leads):
        near = [index for index, word in enumerate(following[:gap + 2]) if word not in ARTICLES][:gap + 1]
        hit = next((index for index in near if _starts(following[index], values)), None)
        if hit is not None and (not then or set(following[hit + 1:]) & set(then)):
            return True
    return False


# A write's text is judged against each of its candidates: what the rules read of one text alone is read once.
@caches.memo("supersede_rules.after", owner="process", key="a fact's text and the lead words",
             bound=TEXTS_KEPT, holds_text=True)
def _after(text: str, leads: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The words after each of ``leads`` in ``text``, one tuple per place a lead is found."""
    return tuple(_words(text[found.end():]) for found in _pattern(leads, text).finditer(text))


def _contrast(text: str, values: tuple[str, ...]) -> bool:
    """"Goes by Sasha now, not Alex": the fact closes by negating one of ``values``."""
    negated = _closing_not(text)
    return negated is not None and _starts(negated, values)


@caches.memo("supersede_rules.closing_not", owner="process", key="a fact's text", bound=TEXTS_KEPT, holds_text=True)
def _closing_not(text: str) -> str | None:
    found = re.search(r"[,;]\s*" + _pattern(NOT, text).pattern + r"\s+(\S+?)[.!]?\s*$", text)
    return None if found is None else found[1]


def _named_before(text: str, values: tuple[str, ...], verbs: tuple[str, ...]) -> bool:
    """"hat Siemens verlassen": a value, at most one word, then one of ``verbs``."""
    return any(_starts(word, values) for before in _before(text, verbs) for word in before)


@caches.memo("supersede_rules.before", owner="process", key="a fact's text and the verbs",
             bound=TEXTS_KEPT, holds_text=True)
def _before(text: str, verbs: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The two words before each of ``verbs`` in ``text``."""
    return tuple(_words(text[:found.start()])[-2:] for found in _pattern(verbs, text).finditer(text))


def _starts(word: str, values: tuple[str, ...]) -> bool:
    return any(word.startswith(value) for value in values)


def _covers(new: tuple[str, ...], old: tuple[str, ...]) -> bool:
    """Every old word has its like among the new ones (compounds split: "Köln-Ehrenfeld" holds "Köln")."""
    parts = _parts(new)
    return bool(old) and all(word in parts or any(_alike(word, other) for other in parts) for word in old)


@caches.memo("supersede_rules.parts", owner="process", key="a fact's words", bound=TEXTS_KEPT, holds_text=True)
def _parts(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(words) | {part for word in words for part in word.split("-")}


@caches.memo("supersede_rules.alike", owner="process", key="two words of facts", bound=TEXTS_KEPT, holds_text=True)
def _alike(one: str, other: str) -> bool:
    """One word inflected two ways: "raucht" / "rauchen", "fume" / "fumer", "smoke" / "smoking"."""
    common = prefix_length(one, other)
    return one == other or (common >= 3 and common >= min(len(one), len(other)) - 2)


def _multi_valued(old: Text, new: Text) -> bool:
    """Both say the user likes, dislikes, speaks, ... something, and not the same thing: one value more."""
    mine, theirs = _many_valued(old), _many_valued(new)
    return bool(mine and theirs) and set(old.words) - mine != set(new.words) - theirs


def _many_valued(text: Text) -> set[str]:
    return {word for word in text.words if word in MULTI_VALUED or word + "s" in MULTI_VALUED}  # "watche(s)"


def _same_kind(old: Text, new: Text) -> str:
    """The first subject kind (in SUBJECTS' order) both texts are about, else "meeting" if both name one."""
    (mine, old_meeting), (theirs, new_meeting) = _kinds(old.lead, old.folded), _kinds(new.lead, new.folded)
    kind = next((kind for kind in mine if kind in theirs), "")
    return kind or ("meeting" if old_meeting and new_meeting else "")


@caches.memo("supersede_rules.kinds", owner="process", key="a fact's lead and folded text",
             bound=TEXTS_KEPT, holds_text=True)
def _kinds(lead: str, folded: str) -> tuple[tuple[str, ...], bool]:
    """The subject kinds a text is about, in SUBJECTS' order, and whether it names a meeting: once per text, not
    once per pair (a write is judged against every fact of its topic)."""
    kinds = tuple(kind for kind, (start, anywhere) in SUBJECTS.items()
                  if re.search(start, lead) or re.search(anywhere, folded))
    return kinds, MEETING.search(folded) is not None


def _frame(old: Text, new: Text, shared: int) -> Verdict:
    """The frame test: the texts differ in one run of content words, the value of one slot."""
    if shared < 1 or shared < MIN_SHARED_SHARE * len(set(old.words)):
        return NO  # too little in common to be one slot's change (asked first: the diff below costs more)
    blocks = changes(old.frame, new.frame)
    if len(blocks) != 1:
        return NO  # two places changed: two subjects ("uv ... packaging" / "ruff ... linting")
    kind, old_start, old_end, new_start, new_end = blocks[0]
    gone, came = old.frame[old_start:old_end], new.frame[new_start:new_end]
    # "switched to" stands in for the old fact's verb; without one, a changed verb is another subject.
    verb = _has(new.folded, VERB_SIGNALS)
    last = old_end == len(old.frame)  # "editor is VS Code" -> "editor is Zed": the value ends the frame
    fits = (kind == "replace" and 1 <= len(came) <= MAX_DIFFERENT and len(gone) <= 1 + (verb or last)
            and not STOPWORDS.intersection(gone + came) and (verb or _verb_kept(old, old_start))
            and not _refines(gone, came) and not _for_another_purpose(old, old_start)
            and not in_context(old.frame, old_start))
    return Verdict(True, shared, "frame") if fits else NO


def _signalled(old: Text, new: Text) -> Verdict:
    """The new fact signals a change and both speak of the same thing: after a change word, the old predicate
    kept with another value ("Fährt einen Diesel" / "Fährt inzwischen elektrisch"); after a strong one (a move, a
    switch, an end, a dated new state), the same topic is enough ("I've been on Helix for a month now")."""
    strong = _news(old, new, STRONG_SIGNALS) or _dated(new.folded)
    if not (strong or _news(old, new, CHANGE_SIGNALS)) or _other_purposes(old, new) or \
            slot_of_its_own(old.folded, new.folded):
        return NO  # "Moved to Porto" says where the user lives: "Cycles to the office" names no place
    lang = pair_language(old.folded, new.folded)
    mine, theirs = meaningful(content_stems(old.folded, lang)), meaningful(content_stems(new.folded, lang))
    kept = head(old.folded, lang) in theirs and bool(mine - theirs) and bool(theirs - mine)
    return Verdict(True, len(mine & theirs), "signal") if strong or kept else NO


def _news(old: Text, new: Text, phrases: tuple[str, ...]) -> bool:
    """Whether the new fact says one of ``phrases`` the old one does not: "now" in both says nothing of either."""
    return bool(_said(new.folded, phrases) - _said(old.folded, phrases))


@caches.memo("supersede_rules.said", owner="process", key="a fact's text and the phrases",
             bound=TEXTS_KEPT, holds_text=True)
def _said(text: str, phrases: tuple[str, ...]) -> frozenset[str]:
    return frozenset(" ".join(found.split()) for found in _pattern(phrases, text, gapped=True).findall(text))


@caches.memo("supersede_rules.dated", owner="process", key="a fact's text", bound=TEXTS_KEPT, holds_text=True)
def _dated(text: str) -> bool:
    return any(re.search(dated, text) for dated in DATED)


def _other_purposes(old: Text, new: Text) -> bool:
    """"Uses Neovim for Go" / "Now uses Neovim for Zig": each names what it is for, and not the same thing."""
    mine, theirs = _purposes(old.frame), _purposes(new.frame)
    return bool(mine and theirs) and not mine & theirs


def _purposes(frame: tuple[str, ...]) -> set[str]:
    return {frame[index + 1] for index, word in enumerate(frame[:-1]) if word in PURPOSE}


def _verb_kept(old: Text, start: int) -> bool:
    """Before the slot, the old fact keeps a word that carries meaning, or a copula ("Is single")."""
    return any(word not in STOPWORDS or word in COPULAS for word in old.frame[:start])


def _for_another_purpose(old: Text, start: int) -> bool:
    """"vim for Python" -> "vim for Rust": the slot that changed is what the value is for."""
    return start > 0 and old.frame[start - 1] in PURPOSE


def _refines(gone: tuple[str, ...], came: tuple[str, ...]) -> bool:
    """"pytest" -> "pytest-xdist": the new fact adds detail to the old value, it replaces nothing."""
    return any(new.startswith((old + "-", old + ".", old + "_")) for old in gone for new in came)


@caches.memo("supersede_rules.has", owner="process", key="a fact's text and the phrases",
             bound=TEXTS_KEPT, holds_text=True)
def _has(text: str, phrases: tuple[str, ...]) -> bool:
    return _pattern(phrases, text, gapped=True).search(text) is not None


def _pattern(phrases: tuple[str, ...], text: str, *, gapped: bool = False) -> re.Pattern[str]:
    """The phrases as one pattern, longest first (so "no longer" is taken before "now" could be), with \\w
    boundaries that work for every script. A gapped phrase lets one word in ("ne utilise plus", "kein Docker mehr").
    Only the phrases ``text`` can hold are compiled (:mod:`.phrase_patterns`): the matches are the whole list's."""
    gap = phrase_patterns.GAPPED if gapped else phrase_patterns.SPACED
    return phrase_patterns.for_text(phrase_patterns.listed(phrases, gap), text)


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
