"""The template context and the sandboxed Jinja environment, light enough for the render child to import.

This module imports nothing heavier than jinja2, because a user template is
rendered in a child process (:mod:`pipeline.render.template_child`) that must start fast.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from .. import caches
from ..errors import TemplateError
from .sanitize import xml
from .template_context import PersonaContext
from .template_sources import builtin_template_dir, find_template, is_shipped, not_found

DEFAULT_NOTE = "_(Some persona facts were left out to fit the token budget.)_"
EMPTY_CONTEXT = PersonaContext("", (), 0)


def is_builtin(filename: str) -> bool:
    """Whether a template file is one of the shipped (trusted) templates."""
    return is_shipped(os.path.realpath(filename))


@caches.memo("jinja.template_note", owner="process", key="a template search path and a template's name", bound=64)
def template_note(search: tuple[str, ...], name: str) -> str:
    """The truncation note in the template's own format: its ``truncation_note`` macro.

    Every shipped template has one, so a target that leaves the note alone
    still gets output that parses (a JSON object for JSON Lines, an element
    for XML). User templates are never compiled in this process, so they, and
    templates without the macro, get the markdown default.
    """
    env = make_environment(search)
    try:
        if not is_builtin(locate(env, name)):
            return DEFAULT_NOTE
        builtin = make_environment((str(builtin_template_dir()),), trusted=True)
        macro = getattr(builtin.get_template(name).make_module({"persona": EMPTY_CONTEXT}), "truncation_note", None)
    except (TemplateError, jinja2.TemplateError):
        return DEFAULT_NOTE
    return str(macro()).strip() if callable(macro) else DEFAULT_NOTE


class RefusedTemplate(jinja2.TemplateError):
    """A template file that exists but may not be used; not a TemplateNotFound, so `ignore missing` cannot hide it."""


class ConfinedLoader(jinja2.BaseLoader):
    """A loader whose templates, includes and imports are read by ``find_template`` alone.

    So no include can pull an arbitrary file into the system prompt (an
    absolute name, ``..``, a symlink out of the directories), and a FIFO or
    device in a template directory is refused without blocking, exactly as the
    settings fingerprint refuses it.
    """

    def __init__(self, searchpath: Sequence[str]) -> None:
        self.searchpath = list(searchpath)

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        try:
            found = find_template(self.searchpath, template)
        except TemplateError as error:
            raise RefusedTemplate(str(error)) from None
        if found is None:  # Jinja's own exception, so `ignore missing` and include lists keep working
            raise jinja2.TemplateNotFound(template, not_found(self.searchpath, template))
        return found.source, found.path, found.uptodate()


_to_json = json.JSONEncoder(ensure_ascii=False).encode  # one encoder, not one per value


@caches.memo("jinja.make_environment", owner="process", key="a template search path and whether it is trusted",
             bound=16)
def make_environment(search: tuple[str, ...], *, trusted: bool = False) -> jinja2.Environment:
    """An environment searching ``search`` in order; cached, so templates compile once per process.

    User templates get Jinja's sandbox. ``trusted`` is for the shipped
    templates alone (``search`` is then just their directory): the sandbox's
    checks on every attribute would triple their render time for nothing.
    """
    kind = jinja2.Environment if trusted else SandboxedEnvironment
    env = kind(
        loader=ConfinedLoader(list(search)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["xml"] = xml
    env.filters["json"] = _to_json
    return env


def load(env: jinja2.Environment, name: str) -> jinja2.Template:
    """The compiled template, or a TemplateError naming the file and line."""
    try:
        return env.get_template(name)
    except jinja2.TemplateNotFound as error:
        raise _not_found(name, error) from None
    except RefusedTemplate as error:
        raise TemplateError(str(error)) from None
    except jinja2.TemplateSyntaxError as error:
        raise TemplateError(f"{error.filename or name}:{error.lineno}: {error.message}") from None


def locate(env: jinja2.Environment, name: str) -> str:
    """The file a template name resolves to, without compiling it; TemplateError if there is none."""
    try:
        return str(env.loader.get_source(env, name)[1])  # type: ignore[union-attr]
    except jinja2.TemplateNotFound as error:
        raise _not_found(name, error) from None
    except RefusedTemplate as error:
        raise TemplateError(str(error)) from None


def _not_found(name: str, error: jinja2.TemplateNotFound) -> TemplateError:
    return TemplateError(error.message or f"template {name!r} not found")


def render_here(env: jinja2.Environment, name: str, context: PersonaContext, *, max_chars: int,
                timeout_s: float | None) -> str:
    """Render in this process; every failure is a TemplateError naming the file and line.

    With ``timeout_s``, template code is traced and stopped at the deadline
    (for the render child); without it nothing is traced (trusted built-ins).
    """
    template = load(env, name)
    filename = template.filename or name
    try:
        if timeout_s is None:  # a shipped template: its output grows with the data alone
            text = template.render(persona=context)
            if len(text) > max_chars:
                raise TemplateError(f"{filename}: output exceeds {max_chars} characters; stopped")
            return text
        with _deadline(timeout_s, _template_dirs(env), filename):
            return _bounded(template.generate(persona=context), max_chars, filename)
    except TemplateError:
        raise
    except MemoryError:
        raise TemplateError(f"{filename}: rendering ran out of memory; stopped") from None
    except Exception as error:  # anything a template can raise: sandbox refusals, undefined names, 1/0
        where = _location(sys.exc_info()[2], filename)
        if isinstance(error, jinja2.TemplateNotFound):
            message = f"template {error.name!r} not found (includes are limited to the template directories)"
        elif isinstance(error, jinja2.TemplateError):
            message = str(error)
        else:
            message = f"{type(error).__name__}: {error}"
        raise TemplateError(f"{where}: {message}") from None


def _bounded(chunks: Iterator[str], max_chars: int, filename: str) -> str:
    out, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > max_chars:
            raise TemplateError(f"{filename}: output exceeds {max_chars} characters; stopped")
        out.append(chunk)
    return "".join(out)


def _template_dirs(env: jinja2.Environment) -> tuple[str, ...]:
    # The same normalisation FileSystemLoader applies to the filenames it compiles templates under.
    return tuple(os.path.normpath(p) for p in getattr(env.loader, "searchpath", []))


@contextmanager
def _deadline(timeout_s: float, template_dirs: tuple[str, ...], filename: str) -> Iterator[None]:
    """Stop template code that runs past the deadline, between its lines.

    A single long expression is stopped by the child's CPU and memory limits
    instead. If a tracer is already installed (a debugger or coverage), it is
    left alone.
    """
    if sys.gettrace() is not None:
        yield
        return
    deadline = time.monotonic() + timeout_s

    def on_line(frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise TemplateError(f"{filename}: rendering took longer than {timeout_s:g} s; stopped")
        return on_line

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        return on_line if frame.f_code.co_filename.startswith(template_dirs) else None

    sys.settrace(on_call)
    try:
        yield
    finally:
        sys.settrace(None)


def _location(trace: TracebackType | None, filename: str) -> str:
    line = None
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == filename:
            line = trace.tb_lineno
        trace = trace.tb_next
    return f"{filename}:{line}" if line else filename
