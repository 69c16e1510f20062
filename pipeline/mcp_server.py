"""`persona mcp`: a stdio MCP server exposing every persona tool.

Needs the optional extra ``mcp`` (``pip install '.[mcp]'``; ``make install`` has it). The SDK is
imported here only, so nothing else pays its start-up cost. In stdio mode
stdout carries the protocol alone; logs go to stderr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .errors import PersonaError
from .settings import Settings
from .tools import PersonaTools, Tool

SERVER_NAME = "persona-tier"


def build_server(settings: Callable[[], Settings]) -> Any:
    """An MCPServer whose tools are :class:`PersonaTools`, with our errors as tool errors."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER_NAME, instructions="The user's L3 persona: durable behavioural facts, "
                                                 "rendered into the system prompt.")
    for tool in PersonaTools(settings).all():
        server.tool(name=tool.__name__, description=tool.__doc__)(_as_tool_errors(tool))
    return server


def _as_tool_errors(tool: Tool) -> Tool:
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return tool(*args, **kwargs)
        except PersonaError as error:
            raise ToolError(str(error)) from None

    return wrapper


def serve(settings: Callable[[], Settings]) -> None:
    """Run over stdio until the client disconnects."""
    build_server(settings).run("stdio")
