"""A tiny OpenAI-compatible fake model server on 127.0.0.1 (stdlib only), for the real-Hermes tests.

    srv = FakeLLM().start()          # binds 127.0.0.1:<ephemeral>
    srv.base_url                     # "http://127.0.0.1:PORT/v1"
    srv.requests                     # list[dict] of every request, in order
    srv.chat_requests() / srv.summary_requests()
    srv.stop()

Every request is recorded as
    {"seq", "t", "method", "path", "headers", "body" (parsed JSON or None),
     "kind", "stream", "server_thread"}
where ``kind`` is one of
    "chat"     - a normal agent turn (has the agent's system prompt / tools)
    "summary"  - the context-compaction summariser (agent.context_compressor)
    "title"    - auxiliary title generation (agent.title_generator)
    "review"   - Hermes' background memory/skill review fork (thread "bg-review"),
                 fired every memory.nudge_interval (default 10) user turns
    "models"   - GET /v1/models (model auto-detect / /model validation)
    "other"    - anything else (answered 404, still recorded)

Chat completions are answered both ways: SSE when the body has
``"stream": true`` (what Hermes' main loop uses) and plain JSON otherwise
(what the auxiliary ``call_llm`` summary/title path uses).

The reply text can be customised with ``responder(body, kind) -> dict`` which
may return {"content": str, "prompt_tokens": int, "tool_calls": [...]} .
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUMMARY_MARKERS = (
    "You are a summarization agent creating a context checkpoint",
    "TURNS TO SUMMARIZE:",
    "NEW TURNS TO INCORPORATE:",
)
TITLE_MARKER = "Generate a short, descriptive title"
REVIEW_MARKER = "Review the conversation above"
FAKE_SUMMARY = "## Active Task\nFAKE-SUMMARY-BODY: the user chatted with the fake model."


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def classify(path: str, body: dict | None) -> str:
    if path.rstrip("/").endswith("/models"):
        return "models"
    if not path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
        return "other"
    msgs = body.get("messages") or []
    texts = [_text_of(m.get("content")) for m in msgs if isinstance(m, dict)]
    joined = "\n".join(texts)
    if any(mark in joined for mark in SUMMARY_MARKERS) and not body.get("tools"):
        return "summary"
    if msgs and TITLE_MARKER in texts[0]:
        return "title"
    last_user = next((t for m, t in zip(reversed(msgs), reversed(texts), strict=False)
                      if isinstance(m, dict) and m.get("role") == "user"), "")
    if last_user.startswith(REVIEW_MARKER):
        return "review"
    return "chat"


class FakeLLM:
    def __init__(self, model: str = "fake-model",
                 responder: Callable[[dict, str], dict[str, Any]] | None = None,
                 models: list[str] | None = None):
        self.model = model
        self.models = models or [model]
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- public
    def start(self) -> FakeLLM:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # silence stderr access log
                pass

            def _read_body(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw) if raw else None
                except Exception:
                    return {"_raw": raw.decode("utf-8", "replace")}

            def _record(self, body):
                kind = classify(self.path, body)
                rec = {
                    "t": time.time(),
                    "method": self.command,
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()
                                if k.lower() in ("user-agent", "authorization", "content-type")},
                    "body": body,
                    "kind": kind,
                    "stream": bool(isinstance(body, dict) and body.get("stream")),
                    "server_thread": threading.current_thread().name,
                }
                with outer._lock:
                    rec["seq"] = len(outer.requests)
                    outer.requests.append(rec)
                return rec

            def _send_json(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                rec = self._record(None)
                if rec["kind"] == "models":
                    self._send_json(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "owned_by": "fake",
                         "context_length": 64000} for m in outer.models]})
                else:
                    self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self):
                body = self._read_body()
                rec = self._record(body)
                if rec["kind"] in ("other", "models"):
                    self._send_json(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                spec = outer._reply_for(body, rec["kind"])
                if rec["stream"]:
                    self._send_sse(body, spec)
                else:
                    self._send_json(200, outer._completion(body, spec))

            def _send_sse(self, body, spec):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                cid = "chatcmpl-" + uuid.uuid4().hex[:12]
                created = int(time.time())
                model = body.get("model") or outer.model

                def chunk(delta, finish=None, usage=None):
                    obj = {"id": cid, "object": "chat.completion.chunk", "created": created,
                           "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                    if usage is not None:
                        obj["usage"] = usage
                    self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
                    self.wfile.flush()

                chunk({"role": "assistant", "content": ""})
                if spec.get("tool_calls"):
                    for i, tc in enumerate(spec["tool_calls"]):
                        chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                               "function": {"name": tc["name"],
                                                            "arguments": tc["arguments"]}}]})
                    finish = "tool_calls"
                else:
                    text = spec["content"]
                    for i in range(0, len(text), 40):
                        chunk({"content": text[i:i + 40]})
                    finish = "stop"
                usage = outer._usage(body, spec)
                chunk({}, finish=finish, usage=usage)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="fake-llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["kind"] == kind]

    def chat_requests(self):
        return self.of_kind("chat")

    def summary_requests(self):
        return self.of_kind("summary")

    def dump(self, path: str) -> None:
        with self._lock, open(path, "w") as f:
            json.dump(self.requests, f, indent=1, default=str)

    # --------------------------------------------------------------- replies
    def _reply_for(self, body: dict, kind: str) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if self.responder:
            spec = dict(self.responder(body, kind) or {})
        if "content" not in spec and not spec.get("tool_calls"):
            if kind == "summary":
                spec["content"] = FAKE_SUMMARY
            elif kind == "title":
                spec["content"] = "Fake Title"
            else:
                spec["content"] = "OK from fake model."
        return spec

    def _usage(self, body: dict, spec: dict[str, Any]) -> dict[str, int]:
        pt = spec.get("prompt_tokens")
        if pt is None:   # like a real provider: messages + tool schemas
            pt = max(1, len(json.dumps(body.get("messages", []))
                            + json.dumps(body.get("tools", []))) // 4)
        ct = max(1, len(spec.get("content") or "") // 4)
        return {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct}

    def _completion(self, body: dict, spec: dict[str, Any]) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
        finish = "stop"
        if spec.get("tool_calls"):
            msg["tool_calls"] = [{"id": tc["id"], "type": "function",
                                  "function": {"name": tc["name"], "arguments": tc["arguments"]}}
                                 for tc in spec["tool_calls"]]
            finish = "tool_calls"
        return {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
                "created": int(time.time()), "model": body.get("model") or self.model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                "usage": self._usage(body, spec)}
