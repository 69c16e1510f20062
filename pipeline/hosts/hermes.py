"""Hermes Agent: served through its plugin (persona tools and injection), not through a file of its own here."""

from __future__ import annotations

from .model import Host

NAME = "hermes"
DISPLAY = "Hermes Agent"

HOST = Host(name=NAME, display=DISPLAY)
