"""Stages: the registry, the runner, and the built-in stages (registered when the registry first loads)."""
