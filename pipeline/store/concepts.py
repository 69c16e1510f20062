"""Near-duplicates said in other words (issue 50): "Dislikes emojis in responses." / "Don't use emoji in replies.",
"Always run tests before committing." / "Run the test suite before every commit.", in six languages.

A fact is read as its concepts: each meaningful word stemmed (Snowball, :mod:`.stems`) or, when it has a synonym
here, named by its class ("replies", "Antworten", "réponses" are one ``answer``), and marked negative when a
negation ("no", "don't", "dislikes", "avoid", "keine", "sans", "sin", "senza", "sem"...) governs it in its clause, so
"dislikes emojis" and "don't use emoji" meet while "uses Docker" and "doesn't use Docker" stay apart. Light and
polite words ("uses", "prefers", "please", "always", "every", "keep") say nothing of which fact it is. Two facts
are one when every concept of the shorter is among the fuller's.
"""

from __future__ import annotations

import re

from .. import caches
from .stems import pair_language, stem_words
from .supersede_words import STOPWORDS, word_set

# Words that negate what follows in their clause (a dislike is a negated liking: "Dislikes emojis" is "no emojis").
NEGATING = word_set(
    "no non not don't dont doesn't never avoid avoids dislike dislikes hate hates without",
    "nicht kein keine keinen keinem keiner ohne nie niemals vermeiden meidet",
    "ne pas sans jamais évite éviter déteste sin nunca evita evitar odia",
    "senza niente nessun nessuna nessuno mai evitare sem não nenhum nenhuma odeia",
)
# Words that close a negation's reach: what a place or a time word introduces is not what is negated.
SCOPE_ENDS = word_set(
    "in on at for before after while with im vor nach bei mit für beim dans sur pour avant après avec",
    "en antes después con para nel nella nelle nei sul per prima dopo nos nas em depois com",
)
# Words that say nothing of which fact it is: light verbs, politeness, frequency, "keep", a suite of tests.
EMPTY = word_set(
    "use uses using used like likes prefer prefers want wants write writes keep keeps should must please always",
    "every each main suite make be do does did is are the a an of to and it its",
    "nutzt nutzen verwendet verwenden verwende benutzt benutzen mag mögen bevorzugt will bitte immer jedem jeden",
    "jede halten lassen soll sollen sollte gern gerne machen",
    "utilise utiliser aime préfère veut écrit garder toujours chaque plaît faire doit",
    "usa usar utiliza utilizar gusta gustan prefiere quiere escribe mantener siempre cada favor hacer debe",
    "usare utilizza utilizzare ama piace piacciono preferisce vuole scrive mantenere sempre ogni favore fare deve",
    "gosta prefere quer escreve manter todo toda todos todas fazer",
)
# Synonyms across the six languages: each word (as folded) to its class.
SYNONYMS = {word: concept for concept, words in {
    "answer": "answer answers answering response responses reply replies antwort antworten antwortet réponse "
              "réponses répond répondre respuesta respuestas responde responder resposta respostas risposta "
              "risposte risponde rispondere",
    "terse": "terse tersely concise concisely brief briefly short knapp kurz kurze kurzen court courte courtes "
             "concis concises bref brève brèves breve breves brevi corto corta cortos cortas curto curta curtos "
             "curtas conciso concisa concisos concisas concisi",
    "recap": "recap recaps summary summaries zusammenfassung résumé récapitulatif récap resumen riepilogo "
             "riassunto resumo recapitulação",
    "run": "run runs running execute executes führt ausführen laufen lance lancer lancez exécute exécuter ejecuta "
           "ejecutar corre correr esegue eseguire lancia lanciare roda rodar executa executar",
    "test": "test tests testing testsuite tests testes",
    "commit": "commit commits committing committed committen commiten committer commiter commitar commitear "
              "committare",
    "emoji": "emoji emojis emojies emoticon emoticons",
}.items() for word in words.split()}
CLAUSE = re.compile(r"[,;.!?:()]")
WORD = re.compile(r"[\w@+#'’-]+")


def same_concepts(one: str, other: str) -> bool:
    """Whether every concept of the shorter text is among the fuller one's: two, or one that is negated ("No
    emojis, please." / "Avoid emojis in answers."), so a lone shared value does not make two facts one."""
    lang = pair_language(one, other)  # "No emojis" is English beside "Avoid emojis", Portuguese beside "Sem"
    mine, theirs = concepts(one, lang), concepts(other, lang)
    shorter, fuller = sorted((mine, theirs), key=len)
    if len(shorter) < 2 and not any(concept.startswith("-") for concept in shorter):
        return False
    return all(concept in fuller for concept in shorter)


@caches.memo("concepts.concepts", owner="process", key="a fact's text and its language", bound=4096,
             holds_text=True)
def concepts(text: str, lang: str) -> frozenset[str]:
    """The text's concepts read in ``lang``: a synonym's class or a word's stem, "-" before those a negation
    governs."""
    folded = re.sub(r"(?<!\w)([nljdmsct]|qu)['’]", r"\1 ", text.casefold())
    found: set[str] = set()
    for clause in CLAUSE.split(folded):
        negated = False
        for place, word in enumerate(token.strip("'’-") for token in WORD.findall(clause)):
            if word in SCOPE_ENDS or (place and lang == "portuguese" and word in ("no", "na")):  # "usa no CI"
                negated = False
            elif word in NEGATING:
                negated = True
            elif len(word) > 1 and word not in STOPWORDS and word not in EMPTY:
                found.add(("-" if negated else "") + _concept(word, lang))
    return frozenset(found)


def _concept(word: str, lang: str) -> str:
    """A synonym's class, by the word or by its stem ("knappe" is "knapp"'s), else the word's stem."""
    stem = stem_words((word,), lang)[0]
    return SYNONYMS.get(word) or _stemmed_synonyms(lang).get(stem) or stem


@caches.memo("concepts.stemmed_synonyms", owner="process", key="a language", bound=8)
def _stemmed_synonyms(lang: str) -> dict[str, str]:
    """Each synonym's stem in ``lang`` to its class: an inflection the list does not spell still finds it."""
    words = tuple(SYNONYMS)
    return dict(zip(stem_words(words, lang), (SYNONYMS[word] for word in words), strict=True))
