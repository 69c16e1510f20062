"""Facts about text that every layer shares."""

import unicodedata
from collections.abc import Iterable, Mapping

# What str.splitlines ends a line at: a setting that must stay on one line may contain none of these.
LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# Every dash and hyphen a paste may carry, after NFKC (which already maps U+2011 to U+2010 and U+FF0D to "-").
DASHES = str.maketrans(dict.fromkeys(
    "\u058a\u05be\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d", "-"))
# A sentence's final marks (and the spaces between them): "Uses uv." and "Uses uv" state one fact.
FINAL_MARKS = ".!?;:,\u2026\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001 "


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 fact``, ``2 facts``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def normal_form(text: str) -> str:
    """The one form two texts are compared in: the same fact in other case, spacing, Unicode form (NFD from a
    macOS paste, full-width digits), invisible format characters, dashes or final punctuation is the same text.

    Compared, never shown: what is stored and rendered stays as the user wrote it.
    """
    visible = "".join(char for char in unicodedata.normalize("NFKC", str(text)) if unicodedata.category(char) != "Cf")
    # Casefolding can leave a text that is no longer NFKC ("ǰ" -> "ǰ"), hence the second pass.
    folded = unicodedata.normalize("NFKC", visible.casefold()).translate(DASHES)
    return " ".join(folded.split()).rstrip(FINAL_MARKS)


# One spelling per topic: topics compare in their normal form (`Git` and `git` are one topic) and show in the
# spelling first used, or the one `topics.aliases` gives. Renders group by it; `persona topics` lists it.

def topic_of(topic: str, aliases: Mapping[str, str]) -> str:
    """The normal form a topic is grouped by: its alias's, when ``topics.aliases`` names it."""
    folded = normal_form(topic)
    return normal_form(aliases.get(folded, topic))


def folded_aliases(aliases: Mapping[str, str]) -> dict[str, str]:
    """``topics.aliases`` keyed by the normal form of each name, so an alias matches in any spelling."""
    return {normal_form(name): shown for name, shown in aliases.items()}


def spellings(first_used: Iterable[tuple[str, object]], aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each raw topic's shown spelling, from (topic, when first used) pairs: anything that orders (an id, a key).

    The earliest spelling of each normal form wins, unless ``topics.aliases`` names the group's spelling.
    """
    folded = folded_aliases(aliases or {})
    named = {normal_form(shown): shown for shown in folded.values()}
    earliest: dict[str, tuple[object, str]] = {}
    raw = list(first_used)
    for topic, when in raw:
        group = topic_of(topic, folded)
        if group not in earliest or when < earliest[group][0]:  # type: ignore[operator]
            earliest[group] = (when, topic)
    shown = {group: named.get(group, topic) for group, (_, topic) in earliest.items()}
    return {topic: shown[topic_of(topic, folded)] for topic, _ in raw}


def same_topic(one: str, other: str) -> bool:
    """Whether two spellings name one topic (aliases aside)."""
    return normal_form(one) == normal_form(other)
