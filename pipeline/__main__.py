"""``python -m pipeline`` runs the ``persona`` CLI."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog_name="persona"))
