"""The fast path: a command's answer replayed from its last full run while everything that run read is as it was.

A replayable command's full run (``persona inject``, ``persona status``, a host's first block) records what it
printed with its inputs, as :mod:`pipeline.inputs` noted them while it ran: every file read or looked for, every
environment variable read, the package's code, what the SQLite store said of the profile
(:mod:`pipeline.store.identity`) and when the answer stops standing. The record is kept under the store's
identity (:mod:`pipeline.fs.records`). The next identical request (its arguments and working directory) finds
the record, compares each input's state now with the recorded one, and prints the recorded answer when all hold.
Nothing is decided here that the full path did not decide: this module only compares, with the same modules'
definitions (the records' home, the store's statement), with the standard library alone. Any difference, doubt or
error answers None: the full path runs, exactly as before. A server store is never recorded.
"""

from __future__ import annotations

import os
import sys

from . import inputs
from .fs import records
from .store import identity

# The commands whose full run records its answer (each calls :func:`pipeline.inject.delivery.keep` at its end).
REPLAYABLE = frozenset({"inject", "status"})
# The arguments the console script (``pipeline.__main__``) was started with, once it falls to the full path:
# what a record is keyed by. None in any other process (a test's CliRunner): nothing is recorded there.
REQUEST: list[str] | None = None


def request_key(argv: list[str], cwd: str) -> str:
    """The key naming one request: its arguments and its working directory (everything else it depends on is
    among the inputs its full run noted)."""
    return records.key("request", argv, cwd)


def lookup(argv: list[str], cwd: str) -> str | None:
    """What the last full run of this request printed, when every input it read still holds; else None."""
    request = request_key(argv, cwd)
    home = records.folder()
    for path in records.candidates(home, request):
        document = records.read(path)
        if document is None or document.get("request") != request or not isinstance(document.get("inputs"), list):
            continue
        if inputs.holds(document["inputs"]):
            output = document.get("output")
            return output if isinstance(output, str) else None
    return None


def replayable(argv: list[str]) -> bool:
    """Whether ``argv`` names a replayable command (and asks for no help or debugging, which always run)."""
    return not ({"--debug", "--help", "-h"} & set(argv)) and bool(REPLAYABLE & set(argv))


def answer(argv: list[str]) -> bool:
    """Print the recorded answer for ``argv`` (the arguments after the program's name) and say True; False
    (nothing printed) when the full path must run."""
    if not replayable(argv):
        return False
    try:
        output = lookup(argv, os.getcwd())
    except Exception:  # any doubt: the full path answers, exactly as it would have
        return False
    if output is None:
        return False
    sys.stdout.write(output)  # once begun, the answer is this one: a broken pipe is the host's, as before
    sys.stdout.flush()
    return True


__all__ = ["identity"]  # imported for its checker: the store's state is compared by the store's own statement


if __name__ == "__main__":  # `python -m pipeline.deliver inject ...`: the recorded answer, or exit status 1
    sys.exit(0 if answer(sys.argv[1:]) else 1)
