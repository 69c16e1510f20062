"""Rendering a target's template: built-in templates in this process, user templates in a limited child.

The context every template sees is :class:`~pipeline.render.jinja.PersonaContext`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import inputs
from ..defaults import DEFAULT_TOPIC
from ..errors import TemplateError
from ..fs.locations import package_root
from ..hosts.escapes import Escape, escape_for
from .jinja import make_environment, render_here
from .model import PersonaFact, RankedFact, RankedPersona, RankedSection
from .prepared import PreparedFacts
from .sanitize import inline
from .template_context import PersonaContext, TemplateItem, TemplateSection
from .template_sources import builtin_template_dir, is_shipped, read_template, search_path

if TYPE_CHECKING:
    from ..config.sections import RenderSettings
    from ..config.targets import ResolvedTarget

__all__ = ["PersonaContext", "TemplateItem", "TemplateSection", "build_context", "builtin_template_dir",
           "render_sections", "render_template", "seen_key"]

# Time the child needs to start before it renders anything (Python and jinja2 imports).
CHILD_START_S = 10.0
CHILD_MODULE = "pipeline.render.template_child"  # run with -m: it must not import the rest of us


def build_context(ranked: RankedPersona, target: str, make_item: Callable[[PersonaFact], TemplateItem] | None = None
                  ) -> PersonaContext:
    """What the template sees; ``make_item`` is :func:`template_item` or a memo of it."""
    item_of = make_item or template_item

    def item(ranked_fact: RankedFact) -> TemplateItem:
        return item_of(ranked_fact.fact)

    sections = tuple(TemplateSection(inline(s.topic) or DEFAULT_TOPIC, tuple(map(item, s.facts)), s.omitted)
                     for s in ranked.sections)
    return PersonaContext(target, sections, sum(len(s.items) for s in sections))


def template_item(fact: PersonaFact) -> TemplateItem:
    """One fact as every template sees it: its text as one inert line."""
    return TemplateItem(inline(fact.content), fact.tier, round(fact.confidence, 3), fact.reinforcement_count)


def render_sections(ranked: RankedPersona, sections: tuple[RankedSection, ...], target: ResolvedTarget,
                    limits: RenderSettings, prepared: PreparedFacts, keys: tuple[object, ...] | None = None) -> str:
    """``target``'s template rendered with ``sections`` of ``ranked`` (all of them, or a fitted selection).

    The render stage renders every section once; the fair fit renders the
    selections it tries. A target's front matter comes first, outside the
    template (dumped by ruamel.yaml, never pasted). What a template sees of each fact comes from the
    run's ``prepared`` facts, so a fact is made inert once per run; with ``keys`` (:func:`seen_key` of
    ``sections``), what it sees of each section is made once for its key, and reused from the profile's last run.
    """
    shown = tuple(_shown(s, prepared) for s in sections) if keys is None else tuple(
        _kept_shown(s, key, prepared) for s, key in zip(sections, keys, strict=True))
    escape = escape_for(target.interprets)
    if escape is not None:
        shown = tuple(_escaped(section, escape) for section in shown)
    context = PersonaContext(target.name, shown, sum(len(s.items) for s in shown))
    return target.front_matter + render_template(limits.template_dirs, target.template, context,
                                                 timeout_s=limits.timeout_s, max_chars=limits.max_output_chars,
                                                 max_memory_mb=limits.max_memory_mb)


def _escaped(section: TemplateSection, escape: Escape) -> TemplateSection:
    """``section`` as its target's host must read it: each fact and the topic escaped the host's way."""
    return TemplateSection(escape(section.topic), tuple([replace(item, text=escape(item.text))
                                                         for item in section.items]), section.omitted)


def _shown(section: RankedSection, prepared: PreparedFacts) -> TemplateSection:
    """What a template sees of ``section`` (:func:`build_context`, without two calls per fact)."""
    get = prepared.get
    return TemplateSection(inline(section.topic) or DEFAULT_TOPIC,
                           tuple([get(f.content).item(f.tier, f.confidence, f.reinforcement_count)
                                  for f in [r.fact for r in section.facts]]), section.omitted)


def _kept_shown(section: RankedSection, key: object, prepared: PreparedFacts) -> TemplateSection:
    """:func:`_shown` of ``section``, whose :func:`seen_key` part is ``key``: after an edit, most sections of a
    render and of the fit's tries are those the last run showed."""
    memo_key = ("section", key)
    shown: TemplateSection | None = prepared.reused(memo_key)
    if shown is None:
        shown = _shown(section, prepared)
        prepared.record(memo_key, shown)
    return shown


def seen_key(sections: tuple[RankedSection, ...]) -> tuple[object, ...]:
    """What a template sees of ``sections`` (:func:`render_sections`), so the same key renders the same bytes
    with the same template and target."""
    return tuple((s.topic, s.omitted, tuple((r.fact.content, r.fact.tier, r.fact.confidence,
                                             r.fact.reinforcement_count) for r in s.facts)) for s in sections)


def render_template(user_dirs: list[Path], name: str, context: PersonaContext, *, timeout_s: float,
                    max_chars: int, max_memory_mb: int) -> str:
    """Render ``name`` with ``context``; every failure is a TemplateError naming the file and line.

    A shipped template is trusted and renders here, untraced. A user template
    renders in a child process under the sandbox, a deadline, an output limit,
    and memory and CPU limits that hold for every expression.
    """
    search = search_path(user_dirs)
    found = read_template(search, name)  # found, not compiled: Jinja folds constants while compiling
    if is_shipped(found.real):  # a shipped template: trusted, in this process
        builtin = make_environment(search[-1:], trusted=True)
        return render_here(builtin, name, context, max_chars=max_chars, timeout_s=None)
    # A user template is compiled only in the child, under its limits.
    return _render_in_child(search, name, context, timeout_s=timeout_s, max_chars=max_chars,
                            max_memory_mb=max_memory_mb, filename=found.path)


def _render_in_child(search: tuple[str, ...], name: str, context: PersonaContext, *, timeout_s: float,
                     max_chars: int, max_memory_mb: int, filename: str) -> str:
    request = {"search": list(search), "name": name, "context": context.to_json(), "timeout_s": timeout_s,
               "max_chars": max_chars, "max_memory_mb": max_memory_mb}
    root = str(package_root())
    environment = inputs.environment()  # the child's own: nothing of it is an input of the answer
    env = {**environment, "PYTHONPATH": os.pathsep.join(filter(None, [root, environment.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, "-m", CHILD_MODULE], input=json.dumps(request).encode(),
                              capture_output=True, timeout=timeout_s + CHILD_START_S, env=env)
    except subprocess.TimeoutExpired:
        raise TemplateError(f"{filename}: rendering took longer than {timeout_s:g} s; stopped") from None
    except OSError as error:
        raise TemplateError(f"{filename}: could not start the render process ({error.strerror})") from None
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        raise TemplateError(_why_the_child_died(filename, done, timeout_s, max_memory_mb)) from None
    if "error" in answer:
        raise TemplateError(str(answer["error"]))
    return str(answer["text"])


def _why_the_child_died(filename: str, done: subprocess.CompletedProcess[bytes], timeout_s: float,
                        max_memory_mb: int) -> str:
    if done.returncode in (-24, -9):  # SIGXCPU, SIGKILL: the CPU limit
        return f"{filename}: rendering took longer than {timeout_s:g} s; stopped"
    if b"MemoryError" in done.stderr or done.returncode in (-6, 134):
        return f"{filename}: rendering needed more than {max_memory_mb} MB (render.max_memory_mb); stopped"
    return f"{filename}: the render process failed (exit {done.returncode})"
