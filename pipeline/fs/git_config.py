"""A repository's remotes, read from its config file as git reads it.

``git config --file CONFIG`` reads it when git is on PATH (with a short
timeout); otherwise :func:`parse_git_config` does, following git's own parser
(``config.c``) rule for rule: ``;`` and ``#`` start a comment outside double
quotes, quotes are taken out, ``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\b`` are
escapes (any other is an error), a backslash at the end of a line continues
the value on the next, and a following line, however deeply indented, is a
variable of its own. Section and variable names are case-insensitive, a
quoted subsection is not. A file git refuses is an error here too.
"""

from __future__ import annotations

from pathlib import Path

from .. import inputs

GIT_TIMEOUT_S = 2.0  # `git config --file` answers in milliseconds; a hung git falls back to the reader
ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
SPACE = " \t\n\r"  # git's isspace()
Entry = tuple[str, str | None]  # (section[.subsection].name, value); None for a name without `=`


class GitConfigError(ValueError):
    """A config file git would refuse ("bad config line N")."""


def remote_urls(config: Path) -> list[tuple[str, str]] | None:
    """Each remote's name and URL, in the file's order; None when the file cannot be read or git refuses it."""
    entries = _by_git(config)
    if entries is None:
        try:
            entries = parse_git_config(config.read_bytes().decode("utf-8", "surrogateescape"))
        except (OSError, GitConfigError):
            return None
    return [(key[len("remote."):-len(".url")], value) for key, value in entries
            if key.startswith("remote.") and key.endswith(".url") and value is not None]


def _by_git(config: Path) -> list[Entry] | None:
    """The file's variables as git lists them; None when git is missing or does not answer in time (the reader's
    turn then), [] when git refuses the file."""
    import shutil
    import subprocess  # only where a remote is read: `persona status` may never need it

    git = shutil.which("git")
    if git is None:
        return None
    environment = {name: value for name, value in inputs.environment().items() if not name.startswith("GIT_")}
    try:
        done = subprocess.run([git, "config", "--file", str(config), "--null", "--list"], capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S, check=False, env=environment)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return []
    return [_entry(item) for item in done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]]


def _entry(item: str) -> Entry:
    key, newline, value = item.partition("\n")
    return key, value if newline else None


def parse_git_config(text: str) -> list[Entry]:
    """Every variable of a git config text, in order, as git reads it; GitConfigError where git would refuse."""
    return _Parser(text.removeprefix("\ufeff")).entries()


class _Parser:
    """git's config.c, one character at a time: a CR before LF is dropped, and the end of the text reads as a
    newline."""

    def __init__(self, text: str) -> None:
        self.text, self.at, self.line, self.eof = text, 0, 1, False

    def next(self) -> str:
        if self.at >= len(self.text):
            self.eof = True
            return "\n"
        char = self.text[self.at]
        self.at += 1
        if char == "\r" and self.text.startswith("\n", self.at):
            char, self.at = "\n", self.at + 1
        self.line += char == "\n"
        return char

    def fail(self) -> GitConfigError:
        return GitConfigError(f"bad config line {self.line}")

    def entries(self) -> list[Entry]:
        found: list[Entry] = []
        section, comment = "", False
        while True:
            char = self.next()
            if char == "\n":
                if self.eof:
                    return found
                comment = False
            elif comment or char in SPACE:
                continue
            elif char in "#;":
                comment = True
            elif char == "[":
                section = self.section()
            elif char.isascii() and char.isalpha():
                found.append(self.variable(section, char.lower()))
            else:
                raise self.fail()

    def section(self) -> str:
        """``[name]``, ``[name.sub]`` (lower-cased whole) or ``[name "sub"]`` (the subsection as written)."""
        name = ""
        while True:
            char = self.next()
            if self.eof:
                raise self.fail()
            if char == "]":
                if not name:
                    raise self.fail()
                return name
            if char in SPACE:
                return f"{name}.{self.subsection(char)}"
            if not (_key_char(char) or char == "."):
                raise self.fail()
            name += char.lower()

    def subsection(self, char: str) -> str:
        while char in SPACE:
            if char == "\n":
                raise self.fail()
            char = self.next()
        if char != '"':
            raise self.fail()
        name = ""
        while (char := self.next()) != '"':
            if char == "\\":
                char = self.next()
            if char == "\n":
                raise self.fail()
            name += char
        if self.next() != "]":
            raise self.fail()
        return name

    def variable(self, section: str, name: str) -> Entry:
        while _key_char(char := self.next()) and not self.eof:
            name += char.lower()
        while char in " \t":
            char = self.next()
        key = f"{section}.{name}" if section else name
        if char == "\n":
            return key, None
        if char != "=":
            raise self.fail()
        return key, self.value()

    def value(self) -> str:
        value, quote, comment, trim = "", False, False, 0
        while True:
            char = self.next()
            if char == "\n":
                if quote:
                    raise self.fail()
                return value[:trim] if trim else value
            if comment:
                continue
            if char in SPACE and not quote:
                trim = trim or len(value)
                value += char if value else ""
                continue
            if char in "#;" and not quote:
                comment = True
                continue
            trim = 0
            if char == "\\":
                char = self.next()
                if char == "\n":
                    continue
                if char not in ESCAPES:
                    raise self.fail()
                value += ESCAPES[char]
            elif char == '"':
                quote = not quote
            else:
                value += char


def _key_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "-")
