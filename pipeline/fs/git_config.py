"""A repository's remotes, read from its config file as git reads it, and every file that reading consulted.

``git config --file CONFIG --includes --show-origin`` reads it when git is on
PATH (with ``GIT_DIR`` the repository's, so ``includeIf "gitdir:..."`` is
judged as git judges it in that checkout, and a timeout: git waits on a FIFO
forever), and names each file an answer came from; each ``include.path`` and
``includeIf.*.path`` is looked for where git looks (``~`` expanded, a relative
path beside the file that includes it). Without git, :func:`parse_git_config`
reads it, following git's own parser (``config.c``) rule for rule: ``;`` and ``#``
start a comment outside double quotes, quotes are taken out, ``\\"``, ``\\\\``,
``\\n``, ``\\t`` and ``\\b`` are escapes (any other is an error), a backslash at
the end of a line continues the value on the next, and a following line,
however deeply indented, is a variable of its own. Section and variable names
are case-insensitive, a quoted subsection is not. It follows ``include.path`` as
git does, ten deep at most; it does not judge ``includeIf`` conditions, so those
files are not followed (only looked at, for what a change to them means). A file
git refuses is an error here too; each file is read without blocking, and only
if it is a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .. import inputs
from .read import read_file

GIT_TIMEOUT_S = 2.0  # `git config` answers in milliseconds; a git that does not has met a FIFO or a dead mount
MAX_CONFIG_BYTES = 1_000_000  # a config file larger than this is not read (the project is then its directory)
MAX_INCLUDE_DEPTH = 10  # git's own limit on nested includes
ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
SPACE = " \t\n\r"  # git's isspace()
Entry = tuple[str, str | None]  # (section[.subsection].name, value); None for a name without `=`


class GitConfigError(ValueError):
    """A config file git would refuse ("bad config line N")."""


@dataclass(frozen=True, slots=True)
class ConfigRead:
    """A config file's variables as git reads them ([] when git refuses it), and every file the reading consulted:
    the config, each file an answer came from, each include's target (there or not), in order, once each."""

    entries: list[Entry]
    consulted: list[str]


def read_config(config: Path, git_dir: Path) -> ConfigRead:
    """The config of the repository whose git directory is ``git_dir``, as git reads it (see the module). OSError
    (TimeoutError among them) when git does not answer in time, or the config or a file it includes is not a
    regular file: our reader walks them first, without blocking, so git never meets a FIFO we could have seen."""
    walked = _by_reader(config)
    by_git = _by_git(config, git_dir, walked)
    if by_git is None:
        return walked
    return ConfigRead(by_git.entries, list(dict.fromkeys([*by_git.consulted, *walked.consulted])))


def remote_urls(entries: list[Entry]) -> list[tuple[str, str]]:
    """Each remote's name and URL, in the order git read them."""
    return [(key[len("remote."):-len(".url")], value) for key, value in entries
            if key.startswith("remote.") and key.endswith(".url") and value is not None]


def include_target(value: str, including: str) -> str:
    """Where git looks for the file an include names: ``~`` expanded, a relative path beside ``including``."""
    path = inputs.expand_user(value)
    return path if os.path.isabs(path) else os.path.join(os.path.dirname(including), path)


def _includes(key: str) -> bool:
    return key == "include.path" or (key.startswith("includeif.") and key.endswith(".path"))


def _git_environment(git_dir: Path) -> dict[str, str]:
    """The environment git runs in: ours without any GIT_ variable, then this repository, and no system or
    global config (neither says where a repository's remote is, and one that is a FIFO would hold git)."""
    environment = {name: value for name, value in inputs.environment().items() if not name.startswith("GIT_")}
    return {**environment, "GIT_DIR": str(git_dir), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def _by_git(config: Path, git_dir: Path, walked: ConfigRead) -> ConfigRead | None:
    """The config as git lists it; None when git is missing or cannot run (the reader's answer, ``walked``, then)."""
    import shutil
    import subprocess  # only where a remote is read: `persona status` may never need it

    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run([git, "config", "--file", str(config), "--includes", "--show-origin", "--null",
                               "--list"], capture_output=True, stdin=subprocess.DEVNULL, timeout=GIT_TIMEOUT_S,
                              check=False, env=_git_environment(git_dir))
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"git config gave no answer in {GIT_TIMEOUT_S:g} s") from None
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:  # git refuses the file, or one it includes
        return ConfigRead([], walked.consulted)
    return _listed(done.stdout.decode("utf-8", "surrogateescape"), config)


def _listed(output: str, config: Path) -> ConfigRead:
    """``--show-origin --null --list``'s output: ``file:PATH``, then ``key\\nvalue``, each ended by NUL."""
    items = output.split("\0")[:-1]
    entries: list[Entry] = []
    consulted = [str(config)]
    for origin, item in zip(items[0::2], items[1::2], strict=False):
        source = origin.removeprefix("file:")
        key, newline, value = item.partition("\n")
        entries.append((key, value if newline else None))
        consulted.append(source)
        if newline and _includes(key) and value:
            consulted.append(include_target(value, source))
    return ConfigRead(entries, list(dict.fromkeys(consulted)))


def _by_reader(config: Path) -> ConfigRead:
    """The config as our reader reads it, ``include.path`` followed (a missing file is skipped, as git skips it);
    [] when git would refuse a file, with what was consulted up to it."""
    consulted: list[str] = []
    try:
        entries = _read_following(str(config), 0, consulted)
    except GitConfigError:
        entries = []
    return ConfigRead(entries, list(dict.fromkeys(consulted)))


def _looked_at(path: str) -> str:
    """``path``, when it is a regular file or missing (git may read it); OSError for a FIFO, socket or device."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return path
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "is not a regular file", path)
    return path


def _read_following(path: str, depth: int, consulted: list[str]) -> list[Entry]:
    consulted.append(path)
    try:
        found = read_file(Path(path), MAX_CONFIG_BYTES, confine_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        if depth:
            return []
        raise
    if found.truncated:
        raise OSError(f"{path} is larger than {MAX_CONFIG_BYTES} bytes")
    entries: list[Entry] = []
    for key, value in parse_git_config(found.data.decode("utf-8", "surrogateescape")):
        entries.append((key, value))
        if not (value and _includes(key)):
            continue
        target = include_target(value, path)
        if key != "include.path":  # an includeIf: its condition is git's to judge; only looked at
            consulted.append(_looked_at(target))
        elif depth >= MAX_INCLUDE_DEPTH:
            raise GitConfigError(f"exceeded maximum include depth ({MAX_INCLUDE_DEPTH}) in {path}")
        else:
            entries += _read_following(target, depth + 1, consulted)
    return entries


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
                value += " " if value else ""  # git keeps each inner whitespace as a space (a tab too)
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
