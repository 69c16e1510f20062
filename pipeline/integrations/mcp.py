"""`persona mcp`: a stdio MCP server exposing every persona tool.

Needs the optional extra ``mcp`` (``pip install '.[mcp]'``; ``make install`` has it). The SDK is
imported here only, so nothing else pays its start-up cost. In stdio mode
stdout carries the protocol alone; logs go to stderr.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from ..config.schema import Settings
from ..errors import PersonaError
from ..fs.locations import package_version
from .tools import PersonaTools, Tool, error_json

SERVER_NAME = "persona-tier"


def load_sdk() -> None:
    """Import the SDK now; ImportError when the ``mcp`` extra is missing or broken."""
    import mcp.server.mcpserver  # noqa: F401
    import mcp_types  # noqa: F401


def build_server(settings: Callable[[], Settings]) -> Any:
    """An MCPServer whose tools are :class:`PersonaTools`, with our errors as tool errors."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER_NAME, version=package_version(), instructions="The user's L3 persona: durable "
                       "behavioural facts, rendered into the system prompt.")
    for name, tool in PersonaTools(settings).catalog(legacy=True).items():
        server.tool(name=name, description=tool.__doc__)(_as_tool_errors(tool))
    return server


def _as_tool_errors(tool: Tool) -> Tool:
    from mcp_types import CallToolResult, TextContent

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except PersonaError as error:
            # A tool error whose text and structured content have the contract's shape,
            # {"status": "error", "error": ...}, like every other surface's answers.
            answer = error_json(str(error))
            return CallToolResult(content=[TextContent(type="text", text=answer)],
                                  structured_content=json.loads(answer), is_error=True)

    return wrapper


def serve(settings: Callable[[], Settings]) -> None:
    """Run over stdio until the client disconnects."""
    build_server(settings).run("stdio")
