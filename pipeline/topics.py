"""One spelling per topic: topics are compared in their normal form (``Git`` and ``git`` are one topic) and shown
in the spelling first used, or the one ``topics.aliases`` gives. Renders group by it; ``persona topics`` lists it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .text import normal_form


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
