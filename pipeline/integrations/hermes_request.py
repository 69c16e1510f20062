"""Reading and changing the requests Hermes' ``llm_request`` middleware sees, one API mode at a time.

Hermes 0.19 builds the provider's own request before the middleware runs,
so each API mode has its own shape (see docs/hermes notes):

- ``chat_completions``: the system prompt is ``messages[0]`` (role system);
- ``anthropic_messages``: ``system``, a string or a list of text blocks;
- ``codex_responses``: ``instructions``, a string;
- ``bedrock_converse``: ``system``, a list of ``{"text": ...}`` blocks with no
  ``type`` key (Bedrock refuses unknown keys);
- ``codex_app_server``: Hermes hands the turn to a Codex subprocess and never
  calls the middleware; a request claiming that mode is not one we know.

A shape we do not know exactly is left alone (:class:`UnknownShape`): a
persona missing from one request is better than a request the provider
refuses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

from .. import caches

SUMMARY_WINDOW = 6  # Hermes puts the summary after its protected head (protect_first_n, 3 by default)
# Copies of hermes-agent 0.19's own markers (agent/context_compressor.py), for when it cannot be imported.
SUMMARY_START = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below."
SUMMARY_END = "--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"
MERGED_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
SUMMARY_ROLES = ("user", "assistant")  # the compressor picks one of these to keep the roles alternating
BEDROCK_SYSTEM_KEYS = frozenset({"text", "cachePoint", "guardContent"})


class UnknownShape(ValueError):
    """The request is not in a shape the plugin can add a system prompt to without breaking it."""


# -- the compaction summary ------------------------------------------------------


@caches.memo("hermes_request.summary_markers", owner="process", key="none: the running Hermes' summary markers",
             bound=1)
def summary_markers() -> tuple[tuple[str, ...], str, str, str]:
    """(prefixes, end marker, merged header, merged delimiter) as the running Hermes writes them.

    The legacy ``[CONTEXT SUMMARY]:`` prefix is left out on purpose: Hermes
    0.19 rewrites every summary it inserts to the current prefix, so a
    message starting with the legacy one was typed, not inserted.
    """
    try:
        from agent import context_compressor as hermes

        prefixes = (hermes.SUMMARY_PREFIX, *getattr(hermes, "_HISTORICAL_SUMMARY_PREFIXES", ()))
        return (tuple(prefixes), hermes._SUMMARY_END_MARKER, hermes._MERGED_PRIOR_CONTEXT_HEADER,
                hermes._MERGED_SUMMARY_DELIMITER)
    except Exception:  # outside Hermes, or a Hermes that moved them
        return (SUMMARY_START,), SUMMARY_END, MERGED_HEADER, MERGED_DELIMITER


def is_inserted_summary(message: dict[str, Any]) -> bool:
    """Whether ``message`` has the exact form Hermes' compressor inserts: a standalone summary, or one merged
    into the first tail message, between the current prefix and the end marker, as user or assistant."""
    if message.get("role") not in SUMMARY_ROLES:
        return False
    prefixes, end, header, delimiter = summary_markers()
    text = text_of(message.get("content")).strip()
    if not text.endswith(end):
        return False
    if text.startswith(header) and delimiter in text:
        text = text.split(delimiter, 1)[1].lstrip()
    return text.startswith(prefixes)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _messages(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("messages", "input"):  # chat completions, Anthropic and Bedrock; Responses
        items = request.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in _messages(request) if m.get("role") not in ("system", "developer")]


def compaction_marker(request: dict[str, Any]) -> str | None:
    """A fingerprint of the summary Hermes inserted into the request's head, or None when there is none.

    Whether it marks a *new* compaction is decided against the session's
    previous request (the plugin's ``_boundary``), not here.
    """
    for message in conversation(request)[:SUMMARY_WINDOW]:
        if is_inserted_summary(message):
            return fingerprint(text_of(message.get("content")))
    return None


def summary_is_last(request: dict[str, Any]) -> bool:
    """Whether the request ends with a summary: Hermes always sends the user's turn after the one it inserts,
    so a summary at the end was typed or pasted."""
    messages = conversation(request)
    return bool(messages) and is_inserted_summary(messages[-1])


def message_digests(request: dict[str, Any]) -> tuple[str, ...]:
    """One digest per conversation message (role and text), to compare a request with the one before."""
    return tuple(fingerprint(repr((m.get("role"), text_of(m.get("content"))))) for m in conversation(request))


def is_continuation(previous: tuple[str, ...], current: tuple[str, ...]) -> bool:
    """True when ``current`` only adds messages to ``previous``: nothing was rewritten, so no compaction."""
    return current[:len(previous)] == previous


def conversation_fingerprint(request: dict[str, Any]) -> str | None:
    """A fingerprint of how the conversation began (its first two messages), once it has more than that."""
    messages = conversation(request)
    if len(messages) < 3:
        return None
    return fingerprint(repr([(m.get("role"), text_of(m.get("content"))) for m in messages[:2]]))


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# -- adding the persona -------------------------------------------------------------


def with_system_text(request: dict[str, Any], text: str, api_mode: str | None = None) -> dict[str, Any]:
    """``request`` with ``text`` appended to its system prompt, in the shape of ``api_mode``.

    Without an ``api_mode`` (an older Hermes) the shape is read from the
    request. Raises :class:`UnknownShape` instead of guessing.
    """
    mode = api_mode or _sniff(request)
    inject = INJECTORS.get(mode)
    if inject is None:
        raise UnknownShape(f"api_mode {mode!r} is not one the plugin can add a system prompt to")
    try:
        return inject(request, text)
    except UnknownShape as error:
        raise UnknownShape(f"api_mode {mode!r}: {error}") from None


def _sniff(request: dict[str, Any]) -> str:
    if "instructions" in request or ("input" in request and "messages" not in request):
        return "codex_responses"
    system = request.get("system")
    if "system" not in request:
        return "chat_completions"
    if isinstance(system, list) and system and all(isinstance(b, dict) and "type" not in b for b in system):
        return "bedrock_converse"
    return "anthropic_messages"


def _chat(request: dict[str, Any], text: str) -> dict[str, Any]:
    messages = request.get("messages")
    if not isinstance(messages, list):
        raise UnknownShape("chat_completions request without a messages list")
    messages = list(messages)
    first = messages[0] if messages else None
    if isinstance(first, dict) and first.get("role") in ("system", "developer"):
        messages[0] = {**first, "content": _append_content(first.get("content"), text, block_type="text")}
    else:
        messages.insert(0, {"role": "system", "content": text.lstrip("\n")})
    return {**request, "messages": messages}


def _anthropic(request: dict[str, Any], text: str) -> dict[str, Any]:
    system = request.get("system")
    if isinstance(system, list) and not all(isinstance(b, dict) and b.get("type") == "text" for b in system):
        raise UnknownShape("anthropic_messages system list holds a block that is not a text block")
    return {**request, "system": _append_content(system, text, block_type="text")}


def _bedrock(request: dict[str, Any], text: str) -> dict[str, Any]:
    system = request.get("system")
    if system is None:
        return {**request, "system": [{"text": text.lstrip("\n")}]}
    if not isinstance(system, list) or not all(_bedrock_block(block) for block in system):
        raise UnknownShape("bedrock_converse system is not a list of Converse system blocks")
    return {**request, "system": [*system, {"text": text.lstrip("\n")}]}


def _bedrock_block(block: Any) -> bool:
    return isinstance(block, dict) and len(block) == 1 and set(block) <= BEDROCK_SYSTEM_KEYS


def _responses(request: dict[str, Any], text: str) -> dict[str, Any]:
    instructions = request.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise UnknownShape("codex_responses instructions is not a string")
    return {**request, "instructions": instructions + text if instructions else text.lstrip("\n")}


def _append_content(content: Any, text: str, *, block_type: str) -> Any:
    """Text appended to a string, or to the last text block of a list (inside its cache breakpoint)."""
    if content is None or content == "" or content == []:
        return text.lstrip("\n")
    if isinstance(content, str):
        return content + text
    if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
        raise UnknownShape(f"system content of type {type(content).__name__}")
    blocks = list(content)
    for index in range(len(blocks) - 1, -1, -1):
        if blocks[index].get("type") == block_type and isinstance(blocks[index].get("text"), str):
            blocks[index] = {**blocks[index], "text": blocks[index]["text"] + text}
            return blocks
    return [*blocks, {"type": block_type, "text": text.lstrip("\n")}]


INJECTORS: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "chat_completions": _chat,
    "anthropic_messages": _anthropic,
    "codex_responses": _responses,
    "bedrock_converse": _bedrock,
}


# -- changing the system text in place ----------------------------------------------


def map_system_text(request: dict[str, Any], change: Callable[[str], str | None],
                    api_mode: str | None = None) -> dict[str, Any] | None:
    """``request`` with the first system text ``change`` alters replaced by its answer; None when it alters
    none (or the shape is not one we know)."""
    mode = api_mode or _sniff(request)
    if mode == "chat_completions":
        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            return None
        first = messages[0]
        if not isinstance(first, dict) or first.get("role") not in ("system", "developer"):
            return None
        content = _changed(first.get("content"), change)
        return None if content is None else {**request, "messages": [{**first, "content": content}, *messages[1:]]}
    key = {"anthropic_messages": "system", "bedrock_converse": "system", "codex_responses": "instructions"}.get(mode)
    if key is None:
        return None
    value = _changed(request.get(key), change)
    return None if value is None else {**request, key: value}


def _changed(content: Any, change: Callable[[str], str | None]) -> Any:
    if isinstance(content, str):
        return change(content)
    if not isinstance(content, list):
        return None
    for index, block in enumerate(content):
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = change(block["text"])
            if text is not None:
                return [*content[:index], {**block, "text": text}, *content[index + 1:]]
    return None


# -- the tools a request offers ------------------------------------------------------


def without_tools(request: dict[str, Any], names: frozenset[str]) -> dict[str, Any] | None:
    """``request`` offering none of the tools ``names``, in every API mode's shape (``tools`` entries named by
    ``function.name``, ``name`` or ``toolSpec.name``; Bedrock's under ``toolConfig``); None when it offers none."""
    tools, config = request.get("tools"), request.get("toolConfig")
    if isinstance(tools, list):
        kept = [tool for tool in tools if _tool_name(tool) not in names]
        return None if len(kept) == len(tools) else {**request, "tools": kept}
    if isinstance(config, dict) and isinstance(config.get("tools"), list):
        kept = [tool for tool in config["tools"] if _tool_name(tool) not in names]
        return None if len(kept) == len(config["tools"]) else {**request, "toolConfig": {**config, "tools": kept}}
    return None


def _tool_name(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return None
    for holder in (tool.get("function"), tool.get("toolSpec"), tool):
        if isinstance(holder, dict) and isinstance(holder.get("name"), str):
            return holder["name"]
    return None
