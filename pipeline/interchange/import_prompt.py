"""``persona import --prompt NAME``: the prompt a user pastes into an old assistant (ChatGPT, Claude, Gemini,
Copilot) so it lists everything it remembers about them in the form ``persona import -`` reads
(:mod:`.formats.assistant`). One text for all, with what each assistant calls its memory: a model answers best
when told where to look."""

from __future__ import annotations

from typing import Literal

from ..errors import InputError
from .formats.assistant import MARK

Assistant = Literal["chatgpt", "claude", "gemini", "copilot"]
# Where each assistant keeps what it remembers, in its own words.
MEMORIES: dict[str, str] = {
    "chatgpt": "your saved memories (Settings > Personalization > Memory), what you know from our past chats, "
               "and my custom instructions",
    "claude": "your memory of me, in every project and outside them, what you know from our past chats, and my "
              "profile preferences",
    "gemini": "your Saved info about me, what you know from our past chats, and my instructions for Gemini",
    "copilot": "your memory and personalization about me, what you know from our past conversations, and my "
               "custom instructions",
}
PROMPT = """\
I am moving my preferences to another tool. List everything you remember about me: {memories}. Include my
preferences (how I like answers, tone, format, language), my work and projects, the tools, languages and
conventions I use, and facts about my life I told you to remember. Leave out one-off tasks and anything you are
not sure of.

Answer with one code block only, in exactly this form, and nothing outside it:

```text
{mark}
## topic
- one fact, as a whole sentence about me ("Prefers short answers.")
- another fact of the same topic
## another topic
- ...
```

Rules: the first line is exactly "{mark}". Topics are short lower-case words (style, work, tools, food...). One
fact per line starting with "- ", written in the third person or as an instruction, never merged with another.
Write each fact in full once, as it is true now: if something changed, give only the current version. If you
remember nothing, give the first line alone.
"""


def import_prompt(assistant: str) -> str:
    """The prompt for ``assistant`` (InputError for one we have no prompt for)."""
    if assistant not in MEMORIES:
        raise InputError(f"no import prompt for {assistant!r}; known: {', '.join(MEMORIES)}")
    return PROMPT.format(memories=MEMORIES[assistant], mark=MARK)
