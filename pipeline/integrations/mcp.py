"""`persona mcp`: a stdio MCP server exposing every persona tool.

Needs the optional extra ``mcp`` (``pip install '.[mcp]'``; ``make install`` has it). The SDK is
imported here only, so nothing else pays its start-up cost. In stdio mode
stdout carries the protocol alone; logs go to stderr.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, cast

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
    """Run over stdio until the client disconnects; every malformed frame is answered (see :mod:`.mcp_stdio`)."""
    import anyio

    anyio.run(_serve_stdio, build_server(settings))


async def _serve_stdio(server: Any) -> None:
    from mcp.server.stdio import stdio_server

    from .mcp_stdio import WireIn, WireOut, claimed_stdio

    with claimed_stdio() as (wire_in, wire_out):
        out = WireOut(wire_out)
        # Explicit streams: the SDK's own framing, fed only frames that parse; ours answers the rest.
        async with stdio_server(stdin=cast(Any, WireIn(wire_in, out)), stdout=cast(Any, out)) as (read, write):
            # MCPServer.run("stdio") builds its own reader; the low-level server is the same one it would run.
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
