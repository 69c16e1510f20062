"""Jinja templates: a sandboxed environment and the one typed context every template sees."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

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


def render_template(env: SandboxedEnvironment, name: str, context: PersonaContext) -> str:
    """Render, turning every Jinja failure into a TemplateError naming the file and line."""
    try:
        template = env.get_template(name)
    except jinja2.TemplateNotFound:
        searched = ", ".join(getattr(env.loader, "searchpath", []))
        raise TemplateError(f"template {name!r} not found in {searched}") from None
    except jinja2.TemplateSyntaxError as error:
        raise TemplateError(f"{error.filename or name}:{error.lineno}: {error.message}") from None
    try:
        return template.render(persona=context)
    except jinja2.TemplateError as error:
        where = _location(sys.exc_info()[2], template.filename or name)
        raise TemplateError(f"{where}: {error}") from None


def _location(trace: TracebackType | None, filename: str) -> str:
    line = None
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == filename:
            line = trace.tb_lineno
        trace = trace.tb_next
    return f"{filename}:{line}" if line else filename
