"""``python -m pipeline`` runs the ``persona`` CLI."""

from pipeline.cli import app

if __name__ == "__main__":
    app(prog_name="persona")
