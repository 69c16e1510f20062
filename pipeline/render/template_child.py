"""The render child: a user template runs here, under memory and CPU limits, away from the host.

The sandbox stops attribute escapes, and tracing stops a loop between lines,
but one expression (``('x'*10**6)*1000``) can exhaust memory or time in a
single step. In a child process the operating system's limits hold for every
step, and whatever happens, the host process is untouched.

Protocol: a JSON request on stdin, a JSON answer on stdout
(``{"text": ...}`` or ``{"error": ...}``).
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from ..errors import TemplateError
from .jinja import make_environment, render_here
from .template_context import PersonaContext


def _limit(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    resource.setrlimit(kind, (value if hard == resource.RLIM_INFINITY else min(value, hard), hard))


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """Render one template under the request's limits."""
    _limit(resource.RLIMIT_AS, int(request["max_memory_mb"]) * 1024 * 1024)
    _limit(resource.RLIMIT_CPU, int(request["timeout_s"]) + 1)
    env = make_environment(tuple(request["search"]))
    try:
        text = render_here(env, request["name"], PersonaContext.from_json(request["context"]),
                           max_chars=int(request["max_chars"]), timeout_s=float(request["timeout_s"]))
    except TemplateError as error:
        return {"error": str(error)}
    return {"text": text}


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    try:
        answer = serve(request)
    except MemoryError:
        answer = {"error": f"{request['name']}: rendering ran out of memory; stopped"}
    sys.stdout.write(json.dumps(answer, ensure_ascii=True))


if __name__ == "__main__":
    main()
