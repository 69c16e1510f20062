"""`persona mcp`: a stdio MCP server exposing every persona tool.

Needs the optional extra ``mcp`` (``pip install 'persona-tier[mcp]'``; ``make install`` has it). The SDK is
imported here only, so nothing else pays its start-up cost. In stdio mode
stdout carries the protocol alone; logs go to stderr.
"""

from __future__ import annotations

import functools
import inspect
import json
import warnings
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, cast

import anyio
import anyio.to_thread

from ..config.schema import Settings
from ..errors import PersonaError
from ..fs.locations import package_version
from ..fs.projects import project_of
from ..hosts import registry
from .mcp_resources import MIME_TYPE, URI_TEMPLATE, PersonaTexts, Watcher, parse_uri
from .mcp_roots import root_directory
from .tools import CALLER, PersonaTools, Tool, error_json

if TYPE_CHECKING:  # the SDK is an optional extra, imported only when the server starts
    from mcp.server.mcpserver import MCPServer

SERVER_NAME = "persona-tier"
ROOTS_TIMEOUT_S = 2.0  # a client that never answers roots/list costs a read this long
MCP_AGENT = registry.MCP  # the agent a `host` scope names over MCP (pipeline.hosts)
# The project of the calling client's first root, for the tool call running now (None: the client has no roots).
SHOWS_SCOPES = frozenset({"persona_list", "persona_review"})  # tools that show only the session's scopes
ROOT_PROJECT: ContextVar[str | None] = ContextVar("persona_root_project", default=None)


def load_sdk() -> None:
    """Import the SDK now; ImportError when the ``mcp`` extra is missing or broken."""
    import mcp.server.mcpserver  # noqa: F401
    import mcp_types  # noqa: F401


def build_server(settings: Callable[[], Settings]) -> tuple[MCPServer, Watcher]:
    """An MCPServer whose tools are :class:`PersonaTools`, with our errors as tool errors, and the rendered
    persona as resources and a prompt; the :class:`Watcher` must run beside it for change notifications."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.subscriptions import InMemorySubscriptionBus

    bus = InMemorySubscriptionBus()  # ours, so the watcher publishes where the listen streams read
    server = MCPServer(SERVER_NAME, version=package_version(), instructions="The user's L3 persona: durable "
                       "behavioural facts, rendered into the system prompt.", subscriptions=bus)
    tools = PersonaTools(settings, agent=MCP_AGENT, project=ROOT_PROJECT.get)
    for name, tool in tools.catalog(legacy=True).items():
        server.tool(name=name, description=tool.__doc__)(_as_tool_errors(tool))
    texts = PersonaTexts(settings)
    watcher = Watcher(texts, bus)
    _add_resources(server._lowlevel_server, texts, watcher, bus)
    _add_prompt(server, texts)
    return server, watcher


def _persona_error(error: PersonaError) -> Exception:
    """Our error as the client sees it: invalid params, with our one clear line."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    return MCPError(code=INVALID_PARAMS, message=str(error))


def _add_resources(lowlevel: Any, texts: PersonaTexts, watcher: Watcher, bus: Any) -> None:
    """resources/list, templates/list, read, subscribe, unsubscribe and subscriptions/listen, all ours:
    the list follows the settings as they are now, and every subscribed URI is watched."""
    import mcp_types as types
    from mcp.server.subscriptions import ListenHandler

    async def listed(ctx: Any, params: Any) -> Any:
        try:
            found = await anyio.to_thread.run_sync(texts.listed)
        except PersonaError as error:
            raise _persona_error(error) from None
        return types.ListResourcesResult(resources=[types.Resource(mime_type=MIME_TYPE, **r) for r in found])

    async def templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            name="persona", uri_template=URI_TEMPLATE, mime_type=MIME_TYPE,
            description="A profile's persona from one target, exactly as the injector appends it to a system "
                        "prompt. A target whose file belongs to another profile is refused.")])

    async def read(ctx: Any, params: Any) -> Any:
        try:
            project = await session_root_project(ctx.session)
            text = await anyio.to_thread.run_sync(lambda: texts.served(*parse_uri(params.uri), project=project))
        except PersonaError as error:
            raise _persona_error(error) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=text,
                                                                             mime_type=MIME_TYPE)])

    async def subscribe(ctx: Any, params: Any) -> Any:
        try:
            await anyio.to_thread.run_sync(lambda: watcher.watch(params.uri, session=ctx.session))
        except PersonaError as error:
            raise _persona_error(error) from None
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: Any) -> Any:
        watcher.unwatch(params.uri, session=ctx.session)
        return types.EmptyResult()

    listen = ListenHandler(bus)

    async def listening(ctx: Any, params: Any) -> Any:
        # The SDK's own stream; ours only watches the URIs it names while it is open.
        uris: list[str] = []
        try:
            for resource in params.notifications.resource_subscriptions or ():
                await anyio.to_thread.run_sync(watcher.watch, resource)
                uris.append(resource)
            return await listen(ctx, params)
        except PersonaError as error:
            raise _persona_error(error) from None
        finally:
            for resource in uris:
                watcher.unwatch(resource)

    for method, params_type, handler in [
        ("resources/list", types.PaginatedRequestParams, listed),
        ("resources/templates/list", types.PaginatedRequestParams, templates),
        ("resources/read", types.ReadResourceRequestParams, read),
        ("resources/subscribe", types.SubscribeRequestParams, subscribe),
        ("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe),
        ("subscriptions/listen", types.SubscriptionsListenRequestParams, listening),
    ]:
        lowlevel.add_request_handler(method, params_type, handler)


def _add_prompt(server: MCPServer, texts: PersonaTexts) -> None:
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.prompts.base import UserMessage

    async def persona(profile: str | None = None, target: str | None = None, ctx: Any = None) -> Any:
        project = await session_root_project(ctx.request_context.session if ctx is not None else None)

        try:
            return [UserMessage(await anyio.to_thread.run_sync(
                lambda: texts.served(profile, target, project=project)))]
        except PersonaError as error:
            raise _persona_error(error) from None

    # The SDK hands the request's context to a parameter annotated Context; the annotation must be the class.
    persona.__annotations__ = {**persona.__annotations__, "ctx": Context[Any, Any] | None}
    server.prompt(name="persona", title="The user's persona",
                  description="The user's L3 persona, exactly as the injector appends it to a system prompt "
                              "(one user message): the target's facts, the mcp agent's and those of the "
                              "project of the client's first root. profile: whose (default store.profile); "
                              "target: which rendering (default injection.target).")(persona)


def _as_tool_errors(tool: Tool) -> Callable[..., Any]:
    """``tool`` as the SDK calls it (a coroutine): it also takes the request's context (what it writes is stamped
    with the client's name; a project scope is its first root's project), and our errors come back as tool errors
    in the contract's shape."""
    from mcp.server.mcpserver import Context
    from mcp_types import CallToolResult, TextContent

    @functools.wraps(tool)
    async def wrapper(*args: Any, mcp_context: Context[Any, Any] | None = None, mcp_roots: Any = None,
                      **kwargs: Any) -> Any:
        token, rooted = CALLER.set(_client_name(mcp_context)), ROOT_PROJECT.set(root_project(mcp_roots))
        try:  # the tool does store I/O: in a worker thread, which sees both context variables (anyio copies them)
            return await anyio.to_thread.run_sync(functools.partial(tool, *args, **kwargs))
        except PersonaError as error:
            # A tool error whose text and structured content have the contract's shape,
            # {"status": "error", "error": ...}, like every other surface's answers.
            answer = error_json(str(error))
            return CallToolResult(content=[TextContent(type="text", text=answer)],
                                  structured_content=json.loads(answer), is_error=True)
        finally:
            ROOT_PROJECT.reset(rooted)
            CALLER.reset(token)

    signature = inspect.signature(tool, eval_str=True)  # resolved where the tool was written
    extra: dict[str, Any] = {"mcp_context": Context[Any, Any] | None}
    if "scope" in signature.parameters or tool.__name__ in SHOWS_SCOPES:  # the session's project: its first root's
        from mcp.server.mcpserver.resolve import Resolve
        from mcp_types import ListRootsResult

        extra["mcp_roots"] = Annotated[ListRootsResult | None, Resolve(_roots_resolver(tool.__name__))]
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
             for name, annotation in extra.items()]
    wrapper.__signature__ = signature.replace(parameters=[*signature.parameters.values(), *added])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {**tool.__annotations__, **extra}
    return wrapper


def _roots_resolver(tool: str) -> Callable[..., Any]:
    """The SDK resolver that fills a tool's ``mcp_roots``: the client's roots, asked only when the call needs the
    session's project (a project scope; a list, a review or a replace by text, which show this session's scopes)
    and the client declares roots (on the 2026-07-28 protocol the SDK asks through an input-required round trip,
    before it a ``roots/list`` request); None otherwise, so no other call waits."""
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.resolve import ListRoots

    def has_roots(ctx: Any) -> bool:
        capabilities = ctx.client_capabilities
        return capabilities is not None and capabilities.roots is not None

    def always(ctx: Any) -> Any:
        return ListRoots() if has_roots(ctx) else None

    def for_scope(ctx: Any, scope: str | None = None) -> Any:
        return ListRoots() if scope == "project" and has_roots(ctx) else None

    def for_replace(ctx: Any, scope: str | None = None, old_text: str | None = None) -> Any:
        return ListRoots() if (scope == "project" or old_text is not None) and has_roots(ctx) else None

    wanted = {"persona_replace": for_replace}.get(tool, always if tool in SHOWS_SCOPES else for_scope)
    wanted.__annotations__ = {"ctx": Context[Any, Any], "scope": str | None, "old_text": str | None, "return": Any}
    return wanted


async def session_root_project(session: Any) -> str | None:
    """The project of the client's first root, for a read (a resource, the prompt): asked with ``roots/list`` on
    a handshake-era connection; None on a 2026-07-28 one (a read cannot ask the client there: only tools take
    the input-required round) or when the client declares no roots or does not answer."""
    capabilities = getattr(session, "client_capabilities", None)
    if capabilities is None or capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in the 2026-07-28 protocol; older clients use them
            return root_project(await session.list_roots())
    except Exception:  # no back-channel (2026-07-28), an error answer, or a timeout: no project
        return None


def root_project(listed: Any) -> str | None:
    """The project of the first ``file://`` root the client listed (its workspace), or None; a directory whose
    project cannot be read (a path the system refuses) is no project."""
    for root in getattr(listed, "roots", None) or ():
        directory = root_directory(str(root.uri))
        if directory is not None:
            try:
                return project_of(directory).identity
            except (OSError, ValueError):
                return None
    return None


def _client_name(context: Any) -> str:
    """The MCP client's own name (its ``initialize`` clientInfo), as a fact's writer says ``tool:NAME``."""
    try:
        info = context.request_context.session.client_params.client_info
        return str(info.name) or MCP_AGENT
    except AttributeError:  # no context, or a client that sent no info
        return MCP_AGENT


def serve(settings: Callable[[], Settings]) -> None:
    """Run over stdio until the client disconnects; every malformed frame is answered (see :mod:`.mcp_stdio`)."""
    anyio.run(_serve_stdio, *build_server(settings))


async def _serve_stdio(server: MCPServer, watcher: Watcher) -> None:
    from mcp.server.stdio import stdio_server

    from .mcp_stdio import WireIn, WireOut, claimed_stdio

    with claimed_stdio() as (wire_in, wire_out):
        out = WireOut(wire_out)
        # Explicit streams: the SDK's own framing, fed only frames that parse; ours answers the rest.
        async with stdio_server(stdin=cast(Any, WireIn(wire_in, out)), stdout=cast(Any, out)) as (read, write):
            # MCPServer.run("stdio") builds its own reader; the low-level server is the same one it would run.
            lowlevel = server._lowlevel_server
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(watcher.run)
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
                tasks.cancel_scope.cancel()  # the client is gone: nobody is left to notify
    watcher.texts.close()
