"""The words the slot reader (:mod:`.slots`) knows, in English, German, French, Spanish, Portuguese and Italian.

A slot is what a fact fills: the editor, the employer, where the user lives, the diet... A slot is known by its
*cues* (words that name it: "editor", "wohnt", "s'appelle") or by a *known value* (a word only one slot takes:
"neovim" is an editor, "pnpm" a package manager). Patterns are matched on case-folded text, as whole words.
"""

from __future__ import annotations

from .supersede_words import word_set

# Values only one slot takes, spelled as folded text says them; several spellings of one value name it once
# ("vs code", "vscode", "visual studio code": vscode).
KNOWN_VALUES: dict[str, dict[str, str]] = {
    "editor": {
        "vim": "vim", "neovim": "neovim", "nvim": "neovim", "emacs": "emacs", "vs code": "vscode", "vscode": "vscode",
        "visual studio code": "vscode", "zed": "zed", "helix": "helix", "sublime text": "sublime",
        "sublime": "sublime", "intellij idea": "intellij", "intellij": "intellij", "eclipse": "eclipse",
        "atom": "atom", "pycharm": "pycharm", "webstorm": "webstorm", "nano": "nano",
        "xcode": "xcode", "android studio": "android studio", "notepad++": "notepad++",
        "lazyvim": "neovim",
    },
    # One package manager per ecosystem: "Uses npm for JavaScript" never replaces "Uses uv, never pip".
    "package_manager": {
        "pip": "pip", "pipx": "pipx", "poetry": "poetry", "uv": "uv", "pipenv": "pipenv", "conda": "conda",
        "mamba": "mamba", "pdm": "pdm",
    },
    "js_package_manager": {"npm": "npm", "pnpm": "pnpm", "yarn": "yarn", "bun": "bun"},
    "tracker": {
        "trello": "trello", "notion": "notion", "jira": "jira", "linear": "linear", "asana": "asana",
        "clickup": "clickup", "todoist": "todoist", "basecamp": "basecamp", "youtrack": "youtrack",
    },
    "chat": {"slack": "slack", "microsoft teams": "teams", "ms teams": "teams", "discord": "discord",
             "mattermost": "mattermost", "zulip": "zulip", "rocket.chat": "rocket.chat"},
    "ci": {"jenkins": "jenkins", "github actions": "github actions", "gitlab ci": "gitlab ci",
           "circleci": "circleci", "travis": "travis", "buildkite": "buildkite", "drone": "drone"},
    "os": {"windows": "windows", "linux": "linux", "macos": "macos", "mac os": "macos", "os x": "macos",
           "ubuntu": "linux", "fedora": "linux", "debian": "linux", "arch linux": "linux", "nixos": "linux"},
    "browser": {"firefox": "firefox", "chrome": "chrome", "chromium": "chrome", "safari": "safari",
                "brave": "brave", "vivaldi": "vivaldi"},
    "vcs": {"git": "git", "mercurial": "mercurial", "svn": "svn", "subversion": "svn"},
    "mail": {"thunderbird": "thunderbird", "outlook": "outlook", "apple mail": "apple mail", "gmail": "gmail",
             "mutt": "mutt", "neomutt": "mutt", "fastmail": "fastmail", "proton mail": "proton",
             "protonmail": "proton"},
    "shell": {"bash": "bash", "zsh": "zsh", "fish": "fish", "fish shell": "fish", "nushell": "nushell",
              "powershell": "powershell", "ksh": "ksh"},
    "forge": {"github": "github", "gitlab": "gitlab", "bitbucket": "bitbucket", "codeberg": "codeberg",
              "gitea": "gitea", "forgejo": "forgejo"},
    "design": {"figma": "figma", "sketch": "sketch", "penpot": "penpot"},
    "containers": {"docker": "docker", "podman": "podman"},
    "diet": {
        "vegan": "vegan", "veganer": "vegan", "veganerin": "vegan", "végan": "vegan", "végane": "vegan",
        "vegano": "vegan", "vegana": "vegan", "vegetarian": "vegetarian", "vegetarisch": "vegetarian",
        "vegetarier": "vegetarian", "vegetarierin": "vegetarian", "végétarien": "vegetarian",
        "végétarienne": "vegetarian", "vegetariano": "vegetarian", "vegetariana": "vegetarian",
        "pescatarian": "pescatarian", "pescetarian": "pescatarian", "pescetarier": "pescatarian",
        "pescétarien": "pescatarian", "pescetariano": "pescatarian", "pescetariana": "pescatarian",
        "pescatariano": "pescatarian", "pescatariana": "pescatarian", "flexitarian": "flexitarian",
        "flexitarier": "flexitarian", "flexitarien": "flexitarian", "flexitariano": "flexitarian",
        "meat": "meat", "chicken": "meat", "beef": "meat", "pork": "meat", "steak": "meat", "ham": "meat",
        "bacon": "meat", "fleisch": "meat", "hähnchen": "meat", "huhn": "meat", "rindfleisch": "meat",
        "schweinefleisch": "meat", "wurst": "meat", "schinken": "meat", "viande": "meat", "poulet": "meat",
        "jambon": "meat", "boeuf": "meat", "bœuf": "meat", "porc": "meat", "carne": "meat", "pollo": "meat",
        "jamón": "meat", "cerdo": "meat", "frango": "meat", "presunto": "meat", "porco": "meat", "manzo": "meat",
        "prosciutto": "meat", "maiale": "meat", "fish": "fish",
        "fisch": "fish", "poisson": "fish", "pescado": "fish", "peixe": "fish", "pesce": "fish",
    },
    "drink": {
        "coffee": "coffee", "espresso": "coffee", "espressos": "coffee", "kaffee": "coffee", "café": "coffee",
        "cafe": "coffee", "caffè": "coffee", "caffe": "coffee", "cafezinho": "coffee", "decaf": "decaf",
        "entkoffeiniert": "decaf", "déca": "decaf", "descafeinado": "decaf", "decaffeinato": "decaf",
        "tea": "tea", "tee": "tea", "thé": "tea", "té": "tea", "tè": "tea", "chá": "tea", "mate": "mate",
        "chimarrão": "mate",
    },
    "alcohol": {
        "beer": "beer", "bier": "beer", "bière": "beer", "cerveza": "beer", "cerveja": "beer",
        "birra": "beer", "wine": "wine", "wein": "wine", "vin": "wine", "vino": "wine", "vinho": "wine",
        "alcohol": "alcohol", "alkohol": "alcohol", "alcool": "alcohol", "álcool": "alcohol",
    },
    "workplace": {
        "remote": "remote", "remotely": "remote", "from home": "remote", "home office": "remote",
        "von zu hause": "remote", "télétravail": "remote", "à distance": "remote", "en remoto": "remote",
        "desde casa": "remote", "de casa": "remote", "em casa": "remote", "da remoto": "remote",
        "da casa": "remote", "in the office": "office", "from the office": "office",
        "at the office": "office", "büro": "office", "au bureau": "office",
        "en la oficina": "office", "oficina": "office", "escritório": "office", "ufficio": "office",
    },
    "smoking": {"smokes": "smoking", "smoking": "smoking", "smoke": "smoking", "smoker": "smoking",
                "cigarettes": "smoking", "raucht": "smoking", "rauchen": "smoking", "rauche": "smoking",
                "raucher": "smoking", "raucherin": "smoking", "fume": "smoking", "fumer": "smoking",
                "fumeur": "smoking", "fumeuse": "smoking", "fuma": "smoking", "fumar": "smoking",
                "fumare": "smoking", "fumo": "smoking", "fumador": "smoking", "fumadora": "smoking",
                "fumante": "smoking", "fumatore": "smoking", "fumatrice": "smoking", "cigarros": "smoking",
                "sigarette": "smoking", "cigarrillos": "smoking", "zigaretten": "smoking"},
    "pronouns": {"he/him": "he", "she/her": "she", "they/them": "they", "xe/xem": "xe", "er/ihm": "he",
                 "sie/ihr": "she", "il/lui": "he", "elle/elle": "she", "iel": "they", "ele/dele": "he",
                 "ela/dela": "she", "él/ella": "they", "lui/lei": "they"},
}
# Words that name a slot, without its value ("Main editor is Neovim", "wohnt in Leipzig", "s'appelle Jean").
CUES: dict[str, str] = {
    "editor": r"editor|editors|ide|edits|editing|édite|éditeur|editiert|edita|editar|editore|codes in|coding in",
    "package_manager": r"package manager|packages|paketmanager|pakete|paquets|gestionnaire de paquets|paquetes|"
                       r"gestor de paquetes|pacotes|gerenciador de pacotes|pacchetti|gestore di pacchetti",
    "js_package_manager": r"package manager|packages|paketmanager|pakete|paquets|gestionnaire de paquets|paquetes|"
                          r"gestor de paquetes|pacotes|gerenciador de pacotes|pacchetti|gestore di pacchetti",
    "employer": r"work\w*(?: \w+){0,3} (?:at|for)|employer|employed|employee of|joined|"
                r"arbeit\w*(?: \w+){0,3} (?:bei|für)|"
                r"angestellt|arbeitgeber|firma|travaill\w* (?:chez|pour|à)|employeur|rejoint|rejoindre|"
                r"trabaj\w* (?:en|para)|empresa|se unió a|trabalh\w* (?:na|no|em|para)|entrou na|entrou no|"
                r"lavor\w* (?:in|per|presso|alla|da)|è entrato in|è entrata in|azienda|freelance|freelancer|"
                r"freiberuflich|selbstständig|indépendant|autónomo|autônomo|agency|agentur|agence|agencia|agência|"
                r"agenzia|company|(?:new )?(?:job|role|position|engineer|developer|designer|consultant|analyst) "
                r"(?:at|with)|stelle bei|job bei|poste chez|emploi chez|puesto en|emprego (?:na|no|em)",
    "place": r"city|home town|hometown|stadt|wohnort|ville|ciudad|città|cidade|"
             r"lives in|lives|live in|lebt|lebe|based in|basé à|basée à|basé en|basado en|basada en|"
             r"baseado em|baseada em|"
             r"con sede a|ansässig in|gezogen|relocated|moved to|moving to|resides|wohnt|wohne|lebt in|"
             r"umgezogen|gezogen nach|habite|vit à|vit en|vis à|installé à|installée à|déménagé|vive en|vivo en|"
             r"se mudó|me mudé|mora em|mora no|mora na|moro em|mudou-se|mudei|vive a|vive in|abita|abito|"
             r"trasferit[oa]|time zone|timezone|zeitzone|fuseau horaire|zona horaria|fuso horário|fuso orario|"
             r"pacific time|eastern time|central time|mountain time|hora del pacífico|hora do pacífico",
    "name": r"name is|my name|goes by|(?:be|is|am|i'm|was) called|(?:be|is|am|i'm) named|call me|"
            r"heißt|heiße|heisst|heisse|rufname|genannt|nennt|"
            r"s appelle|appelle|"
            r"appeler|se llama|me llamo|llamen|llamar|chama-se|chamo-me|chamado|chamada|me chamo|si chiama|"
            r"mi chiamo|chiamato|chiamata|chiamare",
    "shell": r"shell|shells|terminal",
    "pronouns": r"pronouns|pronomen|pronoms|pronombres|pronomes|pronomi",
    "project": r"project|projekt|projet|proyecto|projeto|progetto|repo|repository|renamed|umbenannt|renommé|"
               r"renombr\w*|renome\w*|rinominat\w*",
    "meeting": r"meeting|meetings|stand-?up|standup|sync|retro|review|jour fixe|teammeeting|besprechung|réunion|"
               r"daily|weekly|planning|point hebdo|hebdo|call|"
               r"reunión|reuniao|reunião|riunione|1:1|one-on-one",
}
# The topic a fact that came without one is filed under, by the first slot it fills in this order (issue 50:
# a heading-less import is never all "general"); STYLE_CUES file a fact about how to answer under "style".
TOPICS = (("name", "identity"), ("pronouns", "identity"), ("place", "location"), ("employer", "work"),
          ("workplace", "work"), ("project", "work"), ("meeting", "schedule"), ("diet", "food"), ("drink", "food"),
          ("alcohol", "food"), ("smoking", "health"), ("editor", "tools"), ("package_manager", "tools"),
          ("js_package_manager", "tools"), ("tracker", "tools"), ("chat", "tools"), ("ci", "tools"), ("os", "tools"),
          ("browser", "tools"), ("vcs", "tools"), ("forge", "tools"), ("mail", "tools"), ("design", "tools"),
          ("containers", "tools"))
STYLE_CUES = (r"answers?|answering|responses?|replies|reply|explanations?|tone|terse|tersely|concise|verbose|"
              r"brief|summary|summaries|recap|preamble|emoji|antwort\w*|réponses?|respuestas?|respostas?|"
              r"rispost\w*|ton|tono|tom")
# Slots whose known values are common words elsewhere ("fish"): read only where the slot's cue is said too.
CUED_ONLY = frozenset({"shell"})
# A fact about one of these names who the user is: nothing about another slot replaces it.
IDENTITY = frozenset({"name", "pronouns"})
# Slots that hold one value at a time for the user, so another value replaces the old one.
SINGLE = frozenset({"editor", "package_manager", "js_package_manager", "tracker", "chat", "ci", "os", "browser",
                    "vcs", "employer", "place", "name", "pronouns", "project", "meeting", "diet", "workplace",
                    "containers", "design", "drink", "smoking"})
# Words that name the value they precede (or, after "keinen ... mehr", enclose) as left behind.
LEFT_BEHIND = (
    "instead of", "rather than", "not", "no longer", "anymore", "any more", "left", "quit", "quitting", "gave up",
    "stopped", "dropped", "ditched", "replaced", "renamed", "switched from", "moved from", "moved off",
    "statt", "anstatt", "anstelle von", "nicht mehr", "kein", "keine", "keinen", "keinem", "verlassen",
    "aufgehört", "aufgegeben", "gekündigt", "umbenannt", "rücken gekehrt", "sold", "verkauft", "vendu", "vendió",
    "vendeu", "venduto", "abandoned", "cut out", "no more", "cancelled", "canceled", "storniert", "annulé",
    "résilié", "canceló", "cancelé", "cancelou", "disdetto", "migrated from", "moved away from",
    "au lieu de", "à la place de", "ne plus", "quitté", "a quitté", "arrêté", "abandonné", "renommé",
    "en lugar de", "en vez de", "ya no", "dejó", "dejé", "dejó de", "abandonó",
    "em vez de", "no lugar de", "já não", "não mais", "saiu", "saiu da", "saiu do", "deixou", "deixou de",
    "deixei", "deixei de", "parou", "parou de", "parei", "parei de", "dejé de", "dejamos",
    "quité", "ho lasciato", "ho smesso", "renomeamos", "renomeou",
    "invece di", "al posto di", "non più", "lasciato", "ha lasciato", "smesso", "abbandonato", "rinominato",
)
# "... from X to Y": X is left behind (each "from" word, then one of the "to" words later in the clause).
FROM_TO = (("from", "von", "de", "da", "du", "del", "do", "dal"),
           ("to", "auf", "zu", "nach", "à", "au", "a", "al", "para", "per", "alle", "alla", "pelo", "pela", "por",
            "in", "pelo", "pela", "por", "with", "for", "durch", "par", "con", "col"))
# A swap: the value after it, before a "for" word, is the one given up ("Trocou o Trello pelo Notion").
SWAPS = ("swapped", "replaced", "traded", "getauscht", "ersetzt", "remplacé", "échangé", "cambió", "cambié",
         "cambiamos", "reemplazó", "trocou", "troquei", "trocamos", "substituiu", "cambiato", "sostituito")
# Closing words of a clause that leave what they follow behind ("Trinkt keinen Kaffee mehr", "hat Emacs verlassen").
LEFT_AFTER = ("mehr", "verlassen", "aufgegeben", "aufgehört", "gekehrt", "gekündigt", "verkauft", "anymore",
              "any more", "plus", "più", "mais")
# Words that negate the value they precede: "eats no meat", "ohne Zucker", "sin carne" (the old value's negation).
NEGATING = (
    "not", "never", "doesn't", "does not", "don't", "do not", "isn't", "is not", "no longer",
    "without", "ohne", "nicht", "sans", "pas de", "sin", "sem", "senza", "non", "não",
)
# "no" negates food and drink ("eats no meat", "no bebe café"), but is "in the" in Portuguese ("no Trello").
NEGATING_CONSUMED = (*NEGATING, "no")
CONSUMED = frozenset({"diet", "drink", "alcohol", "smoking"})
# A rename: the value after it, before a "to" word, is the old name ("renamed helios to solaris").
RENAMES = ("renamed", "rename", "umbenannt", "umbenennen", "renommé", "renommer", "renombramos", "renombró",
           "renombrado", "renomeamos", "renomeou", "renomeado", "rinominato", "rinominata", "rinominiamo")
# Words that are never a slot's value: when, how long, how much ("Left Acme last month").
FILLER = word_set(
    "again fully good gegen über unter zwischen nahe near about against contre contra contro sobre sopra",
    "sotto over off last month months year years week weeks day days ago this next first recently now",
    "these still main everything every morning mornings evening evenings daily day bit little lot all at",
    "wieder letzten letztes letzte monat jahr woche seit kurzem jeden morgen täglich immer noch ganz de",
    "nouveau encore mois année an semaine tous les matins matin soir jour otra vez volvió volvio año mes",
    "semana todos las mañanas mañana cada día novamente voltou ano mês semana todas manhãs manhã dia di",
    "nuovo ricominciato anno mese settimana ogni mattina giorno",
)
WEEKDAYS = word_set(
    "monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays",
    "fridays montag dienstag mittwoch donnerstag freitag samstag sonntag montags dienstags mittwochs",
    "donnerstags freitags lundi mardi mercredi jeudi vendredi samedi dimanche lunes martes miércoles",
    "jueves viernes sábado domingo segunda terça quarta quinta sexta segundas terças quartas quintas",
    "sextas lunedì martedì mercoledì giovedì venerdì sabato domenica",
)
# Where a value holds, said of the thing rather than the user (issue 50: "Work laptop runs Windows" / "Home laptop
# runs Linux" are two slots, not one changed). Nouns and adjectives only: "works at", "arbeitet" name an employer.
SPHERES = {
    "work": r"work|job|arbeit|arbeits\w+|beruflich\w*|dienst\w+|travail|boulot|professionnel\w*|trabajo|laboral|"
            r"lavoro|trabalho|profissional",
    "home": r"home|personal|private|privat\w*|zuhause|zu hause|daheim|maison|perso|personnel\w*|privé\w*|casa|"
            r"personale|pessoal|particular",
}
# Slots whose values are a sphere themselves ("works from home", "im Büro"): no qualifier splits them.
SPHERE_VALUED = frozenset({"employer", "workplace"})
# Clause breaks: a value is judged left behind within its own clause only.
CLAUSES = r"[,;.!?]|\s(?:and|but|now|und|aber|jetzt|et|mais|maintenant|y|pero|ahora|e|mas|agora|ma|ora|sondern)\s"
# Prohibitions and standing orders: two of them worded alike are two rules, not a rule and its change.
RULE_STARTS = ("never", "always", "don't", "do not", "avoid", "nie", "niemals", "immer", "keine", "jamais",
               "toujours", "ne jamais", "nunca", "siempre", "sempre", "mai", "non", "evitar", "éviter", "vermeiden",
               "evitare", "use", "run", "keep", "ask", "write", "check", "test", "commit", "push")
# Words before a place's name ("lives in Lisbon", "moved to Porto", "wohnt nach", "vit à Lyon", "mora em Braga").
LOCATIVE = ("in", "to", "near", "nach", "zu", "im", "bei", "à", "au", "en", "a", "em", "no", "na", "para", "nel",
            "nella", "da", "an")
# Words that name a time zone: its value is what follows, no place word needed ("Time zone: CET").
TIME_ZONES = ("time zone", "timezone", "zeitzone", "fuseau horaire", "zona horaria", "fuso horário", "fuso orario",
              "pacific time", "eastern time", "central time", "mountain time", "hora del pacífico",
              "hora do pacífico")
# Words that say where, in what or for what a value holds: "Windows on the laptop", "dark mode in the terminal".
CONTEXT = ("in", "on", "im", "dans", "sur", "en", "no", "na", "nel", "nella", "sul", "sulla", "bei", "auf", "for",
           "für", "pour", "para", "per")
