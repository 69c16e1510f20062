"""The ``persona`` console script, and ``python -m pipeline``: an answer recorded before, with nothing it read
changed since, is replayed with the standard library alone (:mod:`pipeline.deliver`); then a help without typer,
else the typer app (:func:`pipeline.cli.main`)."""

import gc
import sys

from . import deliver


def main() -> None:
    """Run ``persona`` with ``sys.argv``."""
    if deliver.answer(sys.argv[1:]):
        return
    deliver.REQUEST = None if "--debug" in sys.argv else sys.argv[1:]  # a debugging run is never an answer
    from .cli import main as run_cli

    try:
        sys.exit(run_cli(prog_name="persona"))
    finally:
        # The process ends: the interpreter's last collection need not walk the whole heap (0.25 s after a
        # sweep of 1,000 renders, for nothing: the memory goes back with the process).
        gc.freeze()


if __name__ == "__main__":
    main()
