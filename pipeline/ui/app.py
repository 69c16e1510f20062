"""The Starlette application: the guard around every request, the pages, the actions and the change poll.

Store work runs in a worker thread (the store is synchronous); settings are read anew for every request, as the
MCP server reads them, so an edit to the config shows without a restart.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from ..config.load_report import HooksOf, no_hooks
from ..config.schema import Settings
from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER
from ..errors import NotFoundError, PersonaError
from ..scopes import HOSTS
from ..store import PersonaStore
from ..tiers import TIERS
from . import pages
from .actions import ACTIONS, Form
from .security import CSRF_FIELD, HEADERS, TOKEN_PARAM, Keys

log = logging.getLogger(__name__)
HERE = Path(__file__).parent
STATIC = {"ui.css": "text/css", "ui.js": "text/javascript", "favicon.svg": "image/svg+xml"}
WRITER = "ui"  # who the page's writes are stamped with, beside cli and tool:HOST
MAX_NOTES = 64  # notes waiting to be shown after a redirect; the oldest go first
MAX_FORM_BYTES = 1 << 20  # a form of the page is a few kilobytes; a body past this is refused, not read


@dataclass
class Ui:
    """One server's state: how to load settings, whose profile it shows, its secrets, and notes to show."""

    settings: Callable[[], Settings]
    profile: str | None
    keys: Keys
    notes: dict[str, tuple[str, str]] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=itertools.count)
    hooks_of: HooksOf = no_hooks  # what our session-start hook gives a host in a project (`persona ui` reads it)
    templates: Environment = field(default_factory=lambda: Environment(
        loader=FileSystemLoader(HERE / "templates"), autoescape=True, undefined=StrictUndefined))

    def store(self, settings: Settings, *, readonly: bool) -> PersonaStore:
        return PersonaStore.from_settings(settings, profile=self.profile, readonly=readonly, writer=WRITER)

    def note(self, kind: str, text: str) -> str:
        """Keep a line for the page the browser is sent to next, and return its key."""
        key = str(next(self.counter))
        self.notes[key] = (kind, text)
        while len(self.notes) > MAX_NOTES:
            self.notes.pop(next(iter(self.notes)))
        return key


def build_app(ui: Ui) -> Starlette:
    """The application, every route behind the guard."""
    routes = [
        Route("/", _page(ui, "facts", _facts)),
        Route("/agents", _page(ui, "agents", _agents)),
        Route("/proposals", _page(ui, "proposals", _proposals)),
        Route("/history/{persona_id:int}", _page(ui, "history", _history)),
        Route("/forget/{persona_id:int}", _page(ui, "forget", _confirm)),
        Route("/demote/{persona_id:int}", _page(ui, "demote", _confirm)),
        Route("/do/{action}", _action(ui), methods=["POST"]),
        Route("/changes", _changes(ui)),
        Route("/static/{name}", _static),
        Route("/favicon.ico", _favicon),  # asked for by browsers whatever the page links to
    ]
    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=_guard(ui.keys))])


def _guard(keys: Keys) -> Callable[[Request, RequestResponseEndpoint], Awaitable[Response]]:
    async def guard(request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = _refusal(request, keys) or _token_in_url(request, keys) or await _answer(request, call_next)
        response.headers.update(HEADERS)
        return response
    return guard


async def _answer(request: Request, call_next: RequestResponseEndpoint) -> Response:
    """The page, or for a bug a plain 500 that still carries our headers (the message may quote a fact: it is
    logged at debug only)."""
    try:
        return await call_next(request)
    except PersonaError as error:  # the settings could not be read (a config edited since the start)
        return PlainTextResponse(f"error: {error}", status_code=400)
    except Exception as error:
        log.warning("persona ui: %s on %s %s (--debug shows it)", type(error).__name__, request.method,
                    request.url.path)
        log.debug("persona ui: failed", exc_info=True)
        return PlainTextResponse("internal error: run `persona --debug ui` to see it", status_code=500)


def _refusal(request: Request, keys: Keys) -> Response | None:
    if not keys.host_allowed(request.headers.get("host")):
        # The name is not repeated: a page that reached us by DNS rebinding must not learn it.
        return PlainTextResponse("refused: this page answers only at the address `persona ui` printed",
                                 status_code=421)
    if not (keys.is_token(request.query_params.get(TOKEN_PARAM)) or keys.is_token(request.cookies.get(keys.cookie))):
        return PlainTextResponse("refused: open the address `persona ui` printed (it holds this run's key)",
                                 status_code=403)
    if request.method == "POST" and not keys.origin_allowed(request.headers.get("origin"),
                                                            request.headers.get("sec-fetch-site")):
        return PlainTextResponse("refused: a change must come from this page", status_code=403)
    return None


def _token_in_url(request: Request, keys: Keys) -> Response | None:
    """The first visit: keep the token in a cookie and drop it from the address (history, bookmarks)."""
    if TOKEN_PARAM not in request.query_params:
        return None
    rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != TOKEN_PARAM])
    response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
    response.set_cookie(keys.cookie, keys.token, httponly=True, samesite="strict", path="/")
    return response


PageData = Callable[[Ui, Settings, Request], dict[str, Any]]


def _page(ui: Ui, name: str, read: PageData) -> Callable[[Request], Awaitable[Response]]:
    async def page(request: Request) -> Response:
        settings = ui.settings()
        try:
            context = await run_in_threadpool(read, ui, settings, request)
        except PersonaError as error:  # the CLI's own message, on a page that needs nothing else
            status = 404 if isinstance(error, NotFoundError) else 400
            return await _rendered(ui, settings, request, name, "failure", {"failure": str(error)}, status)
        return await _rendered(ui, settings, request, name, name, context, 200)
    return page


async def _rendered(ui: Ui, settings: Settings, request: Request, page: str, template: str,
                    context: dict[str, Any], status: int) -> Response:
    """A template with what every page shows: the navigation, the note an action left, the change counter."""
    generation, open_proposals = await run_in_threadpool(_header, ui, settings)
    note = ui.notes.pop(request.query_params.get("note", ""), None)
    html = ui.templates.get_template(f"{template}.html.j2").render({
        "page": page, "csrf": ui.keys.csrf, "csrf_field": CSRF_FIELD, "generation": generation, "note": note,
        "open_proposals": open_proposals,
        "poll_ms": settings.ui.poll_ms, "profile": ui.profile or settings.store.profile, "tiers": TIERS,
        "default_tier": DEFAULT_TIER, "default_confidence": DEFAULT_CONFIDENCE, "failure": None, **context})
    return HTMLResponse(html, status_code=status)


def _generation(ui: Ui, settings: Settings) -> int:
    try:
        with ui.store(settings, readonly=True) as store:
            return store.generation()
    except PersonaError:
        return -1  # no database yet: the first write changes this and the page reloads


def _header(ui: Ui, settings: Settings) -> tuple[int, int]:
    """What every page's header shows: the change counter (for the poll) and how many proposals are open."""
    try:
        with ui.store(settings, readonly=True) as store:
            return store.generation(), len(pages.proposals(store)) + len(store.held_writes())
    except PersonaError:
        return -1, 0  # no database yet (see _generation)


def _facts(ui: Ui, settings: Settings, request: Request) -> dict[str, Any]:
    query = request.query_params.get("q", "")
    with ui.store(settings, readonly=True) as store:
        return {"topics": pages.facts_by_topic(store, query), "query": query, "scope_label": pages.scope_label,
                "locked": store.locked_ids(), "writer_label": pages.writer_label, "hosts": HOSTS,
                "projects": pages.user_projects(settings, store)}


def _agents(ui: Ui, settings: Settings, request: Request) -> dict[str, Any]:
    with ui.store(settings, readonly=True) as store:
        shown = pages.agents_page(settings, store, ui.hooks_of)
    return {"agents": shown.agents, "history": shown.history}


def _proposals(ui: Ui, settings: Settings, request: Request) -> dict[str, Any]:
    """The open proposals, after a scan of the stored facts: what no single write saw (another tool's facts, an
    import's) is proposed here too, as `persona review --scan` does (idempotent: a pair is proposed once)."""
    with ui.store(settings, readonly=False) as store:
        return {"proposals": pages.proposals(store, scan=True), "held": store.held_writes()}


def _history(ui: Ui, settings: Settings, request: Request) -> dict[str, Any]:
    persona_id = request.path_params["persona_id"]
    with ui.store(settings, readonly=True) as store:
        return {"persona_id": persona_id, "links": pages.history(store, persona_id)}


def _confirm(ui: Ui, settings: Settings, request: Request) -> dict[str, Any]:
    """The fact a demote or a forget asks about before it acts."""
    persona_id = request.path_params["persona_id"]
    with ui.store(settings, readonly=True) as store:
        return {"fact": store.get(persona_id)}


def _action(ui: Ui) -> Callable[[Request], Awaitable[Response]]:
    async def act(request: Request) -> Response:
        action = ACTIONS.get(request.path_params["action"])
        form = await _form(request)
        if form is None:
            return PlainTextResponse(f"refused: a form of this page is at most {MAX_FORM_BYTES >> 20} MiB",
                                     status_code=413)
        if not ui.keys.is_csrf(form.get(CSRF_FIELD)):
            return PlainTextResponse("refused: this form is not from this page (missing or wrong CSRF token)",
                                     status_code=403)
        if action is None:
            return PlainTextResponse("no such action", status_code=404)
        settings = ui.settings()
        try:
            key = ui.note("done", await run_in_threadpool(_run, ui, settings, action, form))
        except PersonaError as error:
            key = ui.note("error", f"error: {error}")
        return RedirectResponse(_back(form.get("next", "/"), key), status_code=303)
    return act


async def _form(request: Request) -> Form | None:
    """The posted form, or None when its body is larger than :data:`MAX_FORM_BYTES`: a Content-Length over it is
    refused before a byte is read, and a chunked body is read only up to it, so no request makes us hold more."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _run(ui: Ui, settings: Settings, action: Callable[..., str], form: Form) -> str:
    with ui.store(settings, readonly=False) as store:
        return action(settings, store, form)


def _back(path: str, note: str) -> str:
    """Where the browser goes after an action: a page of ours (never another site), with the note's key."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        path = "/"
    if path.startswith(("/forget/", "/demote/")):  # the confirmation of a fact that is gone now
        path = "/"
    return path + ("&" if "?" in path else "?") + urlencode({"note": note})


def _changes(ui: Ui) -> Callable[[Request], Awaitable[Response]]:
    async def changes(request: Request) -> Response:
        return JSONResponse({"generation": await run_in_threadpool(_generation, ui, ui.settings())})
    return changes


async def _static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in STATIC:
        return PlainTextResponse("not found", status_code=404)
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])


async def _favicon(request: Request) -> Response:
    return FileResponse(HERE / "static" / "favicon.svg", media_type=STATIC["favicon.svg"])
