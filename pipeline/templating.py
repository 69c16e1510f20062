"""Jinja templates: a sandboxed environment and the one typed context every template sees."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from .errors import TemplateError
from .model import RankedPersona
from .sanitize import inline, xml


@dataclass(frozen=True, slots=True)
class TemplateItem:
    """One fact: ``text`` is already a single inert line."""

    text: str
    tier: str
    confidence: float
    reinforcement_count: int


@dataclass(frozen=True, slots=True)
class TemplateSection:
    """One topic: its facts in rank order, and how many more did not fit ``max_items_per_section``."""

    topic: str
    items: tuple[TemplateItem, ...]
    omitted: int


@dataclass(frozen=True, slots=True)
class PersonaContext:
    """Everything a template sees, as ``persona``. Nothing in it changes between runs on the same data."""

    target: str
    sections: tuple[TemplateSection, ...]
    fact_count: int


def build_context(ranked: RankedPersona, target: str) -> PersonaContext:
    sections = tuple(
        TemplateSection(
            topic=inline(section.topic) or "general",
            items=tuple(
                TemplateItem(inline(r.fact.content), r.fact.tier, round(r.fact.confidence, 3),
                             r.fact.reinforcement_count)
                for r in section.facts
            ),
            omitted=section.omitted,
        )
        for section in ranked.sections
    )
    return PersonaContext(target, sections, sum(len(s.items) for s in sections))


def builtin_template_dir() -> Path:
    """``templates/`` beside the package in a checkout, or inside it when installed from a wheel."""
    packaged = Path(__file__).parent / "_templates"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "templates"


def make_environment(user_dirs: Sequence[Path]) -> SandboxedEnvironment:
    """User directories first, so a user template of the same name wins."""
    search = [str(Path(d).expanduser()) for d in user_dirs] + [str(builtin_template_dir())]
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(search),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["xml"] = xml
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False)
    return env


def render_template(
    env: SandboxedEnvironment, name: str, context: PersonaContext, *, timeout_s: float = 5.0,
    max_chars: int = 5_000_000,
) -> str:
    """Render, turning every failure into a TemplateError naming the file and line.

    User templates are untrusted: besides the sandbox, a render is stopped
    after ``timeout_s`` seconds or ``max_chars`` characters of output.
    """
    try:
        template = env.get_template(name)
    except jinja2.TemplateNotFound:
        searched = ", ".join(getattr(env.loader, "searchpath", []))
        raise TemplateError(f"template {name!r} not found in {searched}") from None
    except jinja2.TemplateSyntaxError as error:
        raise TemplateError(f"{error.filename or name}:{error.lineno}: {error.message}") from None
    filename = template.filename or name
    try:
        with _deadline(timeout_s, _template_dirs(env), filename):
            return _bounded(template.generate(persona=context), max_chars, filename)
    except TemplateError:
        raise
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


def _template_dirs(env: SandboxedEnvironment) -> tuple[str, ...]:
    # The same normalisation FileSystemLoader applies to the filenames it compiles templates under.
    return tuple(os.path.normpath(p) for p in getattr(env.loader, "searchpath", []))


@contextmanager
def _deadline(timeout_s: float, template_dirs: tuple[str, ...], filename: str) -> Iterator[None]:
    """Stop template code that runs past the deadline.

    Tracing is limited to frames compiled from template files, so the cost
    falls on template code alone. If a tracer is already installed (a
    debugger or coverage), it is left alone and only the output limit applies.
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
