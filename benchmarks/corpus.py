"""A multilingual corpus for the budget figures: facts in six scripts, with details of random length."""

from __future__ import annotations

import random

LANGUAGES = {
    "en": ["Answers tersely", "Prefers concrete examples over theory", "Never force-pushes shared branches"],
    "zh": ["用中文回答技术问题", "代码注释保持英文", "喜欢简洁的解释"],
    "ja": ["日本語のドキュメントは丁寧語で書く", "会議は午前中を避ける"],
    "ar": ["يفضل الإجابات القصيرة", "يكتب التوثيق بالعربية"],
    "de": ["Schreibt Commit-Nachrichten auf Englisch", "Bevorzugt kurze Antworten"],
    "emoji": ["Uses 🎉 only in chat 🚀", "Reacts with 👍 to approvals"],
}


def corpus(rng: random.Random, facts: int, topics: int) -> list[tuple[str, str]]:
    """(topic, content) pairs spread over ``topics`` topics."""
    out = []
    for i in range(facts):
        language = rng.choice(list(LANGUAGES))
        text = rng.choice(LANGUAGES[language])
        out.append((f"{language}-{rng.randrange(topics)}", f"{text} ({i}){' ' + 'detail ' * rng.randrange(12)}"))
    return out
