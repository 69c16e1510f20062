"""The words the proposal detector (:mod:`.supersede_rules`) reads, in English, German, French, Spanish, Italian and
Portuguese. Phrases are matched case-folded, as whole words; a space in a phrase matches any run of spaces."""

from __future__ import annotations


def word_set(*lines: str) -> frozenset[str]:
    """The words of ``lines``, split at spaces."""
    return frozenset(" ".join(lines).split())


# "This replaces what was true before."
CHANGE_SIGNALS = (
    # English
    "now", "no longer", "not anymore", "anymore", "any more", "instead", "instead of", "switched to", "switched",
    "moved to", "moved", "changed to", "changed", "correction", "update", "actually", "from now on", "these days",
    "nowadays", "since", "recently", "lately", "new", "upgraded to", "upgraded", "downgraded to", "promoted to",
    "stopped", "quit", "left", "gave up",
    # German
    "jetzt", "nun", "nicht mehr", "kein mehr", "stattdessen", "statt", "gewechselt", "umgestiegen", "umgezogen",
    "gezogen", "korrektur", "inzwischen", "mittlerweile", "ab sofort", "eigentlich", "neuerdings", "seit kurzem",
    "seit", "neue", "neuer", "neues", "verlegt", "aufgehört", "verlassen",
    # French
    "maintenant", "désormais", "dorénavant", "ne plus", "au lieu de", "passé à", "est passé", "est passée",
    "déménagé", "a déménagé", "mise à jour", "en fait", "finalement", "depuis", "nouveau", "nouvelle", "déplacé",
    "déplacée", "a quitté", "quitté", "arrêté",
    # Spanish
    "ahora", "ya no", "en lugar de", "en vez de", "cambió a", "cambió", "se cambió", "se mudó", "corrección",
    "actualización", "en realidad", "de hecho", "a partir de ahora", "desde", "nuevo", "nueva", "se movió",
    "pasó a", "pasó", "dejó de", "actualmente",
    # Italian
    "ora", "adesso", "non più", "ormai", "invece", "invece di", "è passato", "passato a", "si è trasferito",
    "trasferito", "trasferita", "spostato", "spostata", "smesso", "nuovo", "nuova", "in realtà",
    # Portuguese
    "agora", "já não", "não mais", "mudou", "mudou-se", "passou", "passou a", "passou para", "parou de",
    "deixou de", "novo", "nova", "em vez de", "na verdade", "hoje em dia",
)
# "This is one more, beside the old one": the new fact adds, it replaces nothing.
ADDITIVE_SIGNALS = (
    "also", "too", "as well", "in addition", "either", "auch", "zusätzlich", "ebenfalls", "aussi", "également",
    "en plus", "non plus", "también", "además", "tampoco", "anche", "pure", "inoltre", "nemmeno", "neanche",
    "também", "além disso",
)
# The new fact says the old one ended ("no longer uses Docker", "quit smoking", "hat aufgehört").
NEGATIONS = (
    "no longer", "not anymore", "anymore", "any more", "not", "stopped", "quit", "gave up", "left", "nicht mehr",
    "nicht", "kein", "keine", "aufgehört", "verlassen", "ne plus", "ne pas", "arrêté", "quitté", "ya no", "dejó de",
    "no", "non più", "smesso", "non", "já não", "não mais", "não", "parou de", "deixou de",
)
# "... from X to Y": X is the old value, named as the one left behind.
FROM_WORDS = ("from", "von", "de", "da", "du")
TO_WORDS = ("to", "auf", "zu", "nach", "à", "au", "a", "al", "para", "per", "alle", "alla")
# "... instead of X", "statt X": X is the old value, named as no longer true.
INSTEAD_OF = ("instead of", "rather than", "statt", "anstatt", "au lieu de", "en lugar de", "en vez de", "invece di",
              "em vez de")
# "..., not X" closing the fact: a bare negation names the old value only as a closing contrast (anywhere else it
# negates something else: "prefers not to attend music festivals").
NOT = ("not", "nicht", "pas", "plus", "no", "non", "não", "kein", "keine")
# "Was vegetarian, now ...": the old value named in the past tense.
PAST = ("was", "war", "était", "era", "foi")
# Signals that replace the old fact's verb ("Uses pip" -> "Switched to uv").
VERB_SIGNALS = ("switched to", "moved to", "changed to", "umgestiegen", "gewechselt", "passé à", "est passé",
                "cambió a", "se cambió", "passato a", "è passato", "mudou", "passou para", "upgraded to")
# After these the differing word is what the value is for, not the value: "vim for Python" / "vim for Rust".
PURPOSE = ("for", "für", "pour", "para", "per")

# People other than the user: a fact about one of them says nothing about the user's own.
RELATIONS = word_set(
    "mother mom mum father dad parents wife husband partner spouse girlfriend boyfriend son daughter kids children",
    "child brother sister sibling siblings friend friends boss manager colleague colleagues coworker coworkers",
    "family grandmother grandfather uncle aunt cousin roommate neighbour neighbor",
    "mutter vater eltern frau mann partnerin sohn tochter kinder kind bruder schwester freund freundin chef chefin",
    "kollege kollegin familie oma opa",
    "mère père femme mari partenaire fils fille enfants frère sœur soeur ami amie patron collègue famille",
    "conjoint conjointe",
    "madre padre padres esposa esposo mujer marido pareja hijo hija hijos hermano hermana amigo amiga jefe jefa",
    "compañero compañera familia novio novia",
    "genitori moglie compagno compagna figlio figlia figli fratello sorella amico capo collega famiglia",
    "mãe pai pais parceiro parceira filho filha filhos irmão irmã chefe colega família namorado",
    "namorada",
)
THING_OF = frozenset({"package", "paket", "password", "passwort", "window", "project", "projekt", "task", "file",
                      "version"})  # "package manager": a tool, not a person
POSSESSIVES = word_set(
    "his her their my our your sein seine seiner seinem seinen ihr ihre ihrem ihren ihrer mein meine sa",
    "son ses mon ma leur su sus mi sua suo seu meu minha dele dela mio mia",
)
FIRST_PERSON = word_set(
    "my our mein meine mon ma mes mi mis meu minha mio mia",
)
# A team is the user's own ("the team left Slack") unless it is someone else's ("his team switched to Go").
TEAMS = word_set(
    "team teams équipe equipo equipe equipa squadra",
)
# Predicates that hold many values at once: one more liked dish or spoken language replaces none of the others.
MULTI_VALUED = word_set(
    "like likes liked dislike dislikes love loves hate hates enjoy enjoys avoid avoids allergic intolerant speak",
    "speaks read reads play plays watch watches collect collects stand",
    "mag mögen liebt liebe hasst hasse genießt spielt spiele spricht spreche liest lese allergisch hört höre meidet",
    "meide sammelt",
    "aime adore déteste apprécie joue parle lit allergique écoute évite",
    "gusta gustan encanta encantan odia disfruta juega habla lee alérgico alérgica escucha evita",
    "piace piacciono ama odia adora gioca parla legge allergico allergica ascolta evita",
    "gosta gosto adora odeia joga fala lê escuta evita",
)
STOPWORDS = word_set(
    "a an the for of in on at to and or with by is are be it its as from that this their his her my our your",
    "i me am was were has have had does do did not don't doesn't i'm he she they we you",
    "der die das den dem des ein eine einen einem einer und oder mit für von zu zum zur im am auf bei ist sind",
    "nach aus als es sein seine ihr ihre nicht kein keine mehr ich mich mir mein meine bin hat habe haben wird wurde",
    "war",
    "le la les un une du de et ou pour avec en au aux dans sur par est sont son sa ses à chez ne plus pas je j m",
    "mon ma mes suis ai l d qu s y c",
    "el los las una unos unas y o para con del al por es son su sus que lo no yo mi mis soy estoy está he ha se",
    "le les muy",
    "il lo gli i di da con per alla alle ai del della che non io mio mia sono è ho",
    "os as do dos das em no na nos nas um uma com eu meu minha sou estou é tem ao",
)
# Copulas and pronouns a fact may start with before the words a subject kind is read from.
LEADING = word_set("i ich je yo io eu is am ist bin est suis es soy è sono é sou was war était era")
COPULAS = word_set("is am are ist bin sind est suis sont es soy son è sono é sou")
ARTICLES = word_set("the a an der die das den dem le la les l el los las il lo gli o os as")

# Change signals strong enough to propose on their own, the topic being the same ("I've been on Helix for a month
# now" updates "Edits in Sublime Text" without a word in common): a move, a switch, an end, a correction.
STRONG_SIGNALS = (
    # English
    "switched", "switched to", "moved to", "moved", "relocated", "no longer", "not anymore", "anymore", "any more",
    "from now on", "instead", "instead of", "correction", "update", "pushed to", "got pushed", "pushed back",
    "slipped", "slipped to", "postponed", "rescheduled", "quit", "stopped", "gave up", "passed away", "just started",
    "started a new", "new job", "changed", "changed to", "went with", "cancelled", "canceled", "sold", "replaced",
    "since the", "ever since", "upgraded to", "downgraded to", "joined", "left", "don't anymore", "promoted",
    "got married", "married now", "divorced",
    # German
    "umgezogen", "gezogen", "umgestiegen", "gewechselt", "nicht mehr", "kein mehr", "stattdessen", "korrektur",
    "ab sofort", "aufgehört", "verlassen", "angefangen", "verlegt", "verschoben", "geändert", "neuerdings",
    # French
    "déménagé", "suis passé à", "suis passée à", "passé à", "est passé", "est passée", "ne plus", "au lieu de",
    "désormais", "dorénavant", "mise à jour", "déplacé", "déplacée", "a quitté", "quitté", "arrêté",
    "à partir de maintenant", "repoussé", "reporté", "changé",
    # Spanish
    "me mudé", "se mudó", "mudé", "me pasé a", "pasé a", "pasó a", "pasó al", "cambió", "cambio", "cambié", "ya no",
    "en lugar de", "en vez de", "corrección", "actualización", "a partir de ahora", "dejé", "dejé de", "dejó de",
    # Italian
    "mi sono trasferito", "mi sono trasferita", "trasferito", "trasferita", "sono passato a", "sono passata a",
    "non più", "invece", "invece di", "spostato", "spostata", "smesso", "ho smesso", "da ora in poi", "correzione",
    "rinviato", "cambiato",
    # Portuguese
    "mudei-me", "mudei", "mudou-se", "troquei", "passei a", "passei para", "passou para", "já não", "não mais",
    "em vez de", "deixei de", "deixou de", "parou de", "parei de", "correção", "a partir de agora",
)
# Time phrases that date a new state: "for a month now", "seit einem Jahr", "depuis mon accident", "since March".
MONTHS = sorted(word_set(
          "january february march april may june july august september october november december spring summer "
          "autumn fall winter januar februar märz juni juli oktober dezember frühling sommer herbst janvier février "
          "mars avril mai juin juillet août septembre octobre novembre décembre printemps été hiver enero febrero "
          "marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre primavera verano invierno "
          "gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre estate inverno janeiro fevereiro "
          "março maio junho julho setembro outubro novembro dezembro verão"))
DATED = (
    r"\bfor (?:a|an|one|two|three|a few|several|\d+) (?:days?|weeks?|months?|years?) now\b",
    r"\b(?:since|seit|depuis|desde|da|dal|dalla|desde o|desde a) (?:the |el |le |il |o |a |einem |einer |un |una |"
    r"um |uma |mon |ma |mi |meu |minha )?(?:" + "|".join(MONTHS) + r"|tag|woche|monat|jahr|jour|semaine|mois|an|"
    r"año|mes|semana|anno|mese|settimana|ano|accident|unfall|accidente|incidente|acidente|reorg)\b",
    r"\b(?:hace poco|hace (?:un|una|\d+) \w+|vor (?:einem|einer|\w+) (?:tag|woche|monat|jahr|monaten|jahren|wochen)|"
    r"il y a (?:un|une|\d+) \w+|fa\b|há (?:um|uma|\d+) \w+|last (?:week|month|year|spring|summer|autumn|fall|winter)|"
    r"el (?:mes|año) pasado|no ano passado|l'an dernier|letztes jahr|im (?:sommer|winter|frühling|herbst))\b",
)
