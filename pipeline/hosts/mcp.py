"""MCP clients: the agent a `host` scope names for every client of `persona mcp`."""

from __future__ import annotations

from .model import Host

NAME = "mcp"
DISPLAY = "MCP clients"

HOST = Host(name=NAME, display=DISPLAY)
