"""``python -m pipeline`` runs the ``persona`` CLI."""

from .cli import app

if __name__ == "__main__":
    app(prog_name="persona")
