"""One fake model server on 127.0.0.1 for the real coding-agent CLIs: it records every request and answers
each API's smallest valid reply (streamed where the request asks for a stream), so the CLI exits cleanly.

    with FakeModel() as model:      # binds 127.0.0.1:<a free port>
        model.url                   # "http://127.0.0.1:PORT"
        ...run a CLI against it...
        model.requests              # every Request, in order: api, method, path, headers, body

The APIs, told apart by path:
    anthropic  POST /v1/messages (Claude Code; server-sent events when "stream" is true)
    openai     POST /v1/responses (Codex; always server-sent events)
    chat       POST /v1/chat/completions (OpenCode's OpenAI-compatible provider; events when "stream" is true)
    gemini     POST /v1beta/models/MODEL:generateContent (JSON) and :streamGenerateContent?alt=sse
    other      anything else: recorded, answered 404

A test scripts the model's tool calls: ``FakeModel(calls=[ToolCall("write_file", {...})])`` answers the first
request that offers a tool of that name with a call to it (Gemini's functionCall, Anthropic's tool_use), once;
every other request, the one carrying the tool's result included, gets the text reply.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "OK from the fake model."
SUMMARY = "<analysis>The user said hello.</analysis>\n<summary>FAKE SUMMARY: the user said hello.</summary>"


@dataclass(frozen=True)
class Request:
    """One request the server received."""

    seq: int
    api: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the parsed JSON, or {"_raw": text} when the body was not JSON, or None when it was empty

    @property
    def text(self) -> str:
        """Every string in the body, one after another: the text a test counts a fact in."""
        return "\n".join(_strings(self.body))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def answer_text(request: Request) -> str:
    """REPLY, or a summary in the tags Claude Code's compaction asks for (it asks again when they are missing)."""
    users = [m for m in (request.body or {}).get("messages") or [] if m.get("role") == "user"]
    last = json.dumps(users[-1]["content"]) if users else ""
    return SUMMARY if "<summary>" in last and "<analysis>" in last else REPLY


def api_of(path: str) -> str:
    route = path.split("?")[0]
    if route.endswith("/v1/messages"):
        return "anthropic"
    if route.endswith("/v1/responses"):
        return "openai"
    if route.endswith("/v1/chat/completions"):
        return "chat"
    if route.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini"
    return "other"


@dataclass(frozen=True)
class ToolCall:
    """One call the model makes, the first time a request offers the tool ``name``."""

    name: str
    args: dict[str, Any]


def offered(request: Request) -> set[str]:
    """The names of the tools a request offers the model (each API's own shape)."""
    names: set[str] = set()
    for tool in (request.body or {}).get("tools") or []:
        if isinstance(tool, dict):
            names.update(d.get("name") for d in tool.get("functionDeclarations") or [] if isinstance(d, dict))
            if isinstance(tool.get("name"), str):
                names.add(tool["name"])
    return names


@dataclass
class FakeModel:
    """The server; ``reply(request) -> str`` chooses each answer's text (default: REPLY); ``calls`` the tool calls
    it makes, in order, each once."""

    reply: Callable[[Request], str] = answer_text
    calls: list[ToolCall] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True

    def __enter__(self) -> FakeModel:
        threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def record(self, method: str, path: str, headers: dict[str, str], body: Any) -> Request:
        with self._lock:
            request = Request(len(self.requests), api_of(path), method, path, headers, body)
            self.requests.append(request)
        return request

    def call_for(self, request: Request) -> ToolCall | None:
        """The next scripted call, taken, when ``request`` offers its tool."""
        with self._lock:
            if self.calls and request.api in CALLS and self.calls[0].name in offered(request):
                return self.calls.pop(0)
        return None

    def of(self, api: str) -> list[Request]:
        """The requests to one API, in order."""
        with self._lock:
            return [request for request in self.requests if request.api == api]

    def dump(self) -> str:
        """Every request as JSON lines, for a failing assertion's message."""
        with self._lock:
            return "\n".join(json.dumps({"seq": r.seq, "api": r.api, "path": r.path, "body": r.body},
                                        ensure_ascii=False)[:2000] for r in self.requests)


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: Any) -> None:
            pass

        def do_GET(self) -> None:
            model.record("GET", self.path, dict(self.headers.items()), None)
            self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            request = model.record("POST", self.path, dict(self.headers.items()), self._body())
            answer = ANSWERS.get(request.api)
            if answer is None:
                self._json(404, {"error": {"message": "not found"}})
                return
            call = model.call_for(request)
            if call is not None:
                CALLS[request.api](self, request, call)
                return
            answer(self, request, model.reply(request))

        def _body(self) -> Any:
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                return json.loads(raw) if raw else None
            except ValueError:
                return {"_raw": raw.decode("utf-8", "replace")}

        def _json(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def events(self, events: Iterator[tuple[str | None, Any]]) -> None:
            """Server-sent events, then the connection closes (no length is known up front)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, data in events:
                head = f"event: {name}\n" if name else ""
                self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    return Handler


# -- each API's smallest valid answer -------------------------------------------------------------------------


def _anthropic(handler: Any, request: Request, text: str) -> None:
    body = request.body or {}
    message = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
               "model": body.get("model", "fake"), "stop_reason": "end_turn", "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 5}}
    if not body.get("stream"):
        handler._json(200, {**message, "content": [{"type": "text", "text": text}]})
        return
    handler.events(iter([
        ("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]))


def _openai(handler: Any, request: Request, text: str) -> None:
    body = request.body or {}
    response_id, item_id = "resp_" + uuid.uuid4().hex[:20], "msg_" + uuid.uuid4().hex[:20]
    item = {"type": "message", "id": item_id, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    response = {"id": response_id, "object": "response", "model": body.get("model", "fake"), "status": "completed",
                "output": [item], "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                                            "total_tokens": 15}}
    handler.events(iter([
        ("response.created", {"type": "response.created",
                              "response": {**response, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "status": "in_progress", "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item_id,
                                        "output_index": 0, "content_index": 0, "delta": text}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "response": response}),
    ]))


def _chat(handler: Any, request: Request, text: str) -> None:
    body = request.body or {}
    head = {"id": "chatcmpl-" + uuid.uuid4().hex[:20], "created": 1, "model": body.get("model", "fake")}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not body.get("stream"):
        handler._json(200, {**head, "object": "chat.completion", "usage": usage, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})
        return
    chunk = {**head, "object": "chat.completion.chunk"}
    handler.events(iter([
        (None, {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                                      "finish_reason": None}]}),
        (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        (None, {**chunk, "choices": [], "usage": usage}),
    ]))
    handler.wfile.write(b"data: [DONE]\n\n")


def _gemini(handler: Any, request: Request, text: str) -> None:
    config = (request.body or {}).get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None:  # a JSON call (Gemini CLI's model router): it retries anything that fails its schema
        text = json.dumps(sample(schema))
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                              "index": 0}],
              "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
    if "streamGenerateContent" in request.path:
        handler.events(iter([(None, answer)]))
    else:
        handler._json(200, answer)


def sample(schema: dict[str, Any]) -> Any:
    """The smallest value that a JSON schema (OpenAPI-style types, either case) accepts."""
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: sample(properties.get(name) or {}) for name in schema.get("required") or properties}
    return {"string": "fake", "integer": 1, "number": 1, "boolean": False, "array": []}.get(kind)


ANSWERS: dict[str, Callable[[Any, Request, str], None]] = {
    "anthropic": _anthropic, "openai": _openai, "chat": _chat, "gemini": _gemini}


# -- each API's tool call -------------------------------------------------------------------------------------


def _anthropic_call(handler: Any, request: Request, call: ToolCall) -> None:
    body = request.body or {}
    block = {"type": "tool_use", "id": "toolu_" + uuid.uuid4().hex[:20], "name": call.name}
    message = {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
               "model": body.get("model", "fake"), "stop_sequence": None}
    if not body.get("stream"):
        handler._json(200, {**message, "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5},
                            "content": [{**block, "input": call.args}]})
        return
    handler.events(iter([
        ("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps(call.args)}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ]))


def _gemini_call(handler: Any, request: Request, call: ToolCall) -> None:
    answer = {"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": call.name, "args": call.args}}]}, "finishReason": "STOP", "index": 0}],
              "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}
    if "streamGenerateContent" in request.path:
        handler.events(iter([(None, answer)]))
    else:
        handler._json(200, answer)


CALLS: dict[str, Callable[[Any, Request, ToolCall], None]] = {"anthropic": _anthropic_call, "gemini": _gemini_call}
