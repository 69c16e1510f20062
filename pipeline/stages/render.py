"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from dataclasses import replace

from ..config.targets import ResolvedTarget
from ..render.model import RankedPersona, RankedSection, Rendered
from ..render.templating import build_context, render_template
from .context import StageContext
from .registry import NoOptions, stage


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes."""
    target = ctx.current_target
    return Rendered(render_sections(ctx, target, ranked, ranked.sections), ranked, target)


def render_sections(ctx: StageContext, target: ResolvedTarget, ranked: RankedPersona,
                    sections: tuple[RankedSection, ...]) -> str:
    """The target's template rendered with ``sections`` (all of them, or a fitted selection)."""
    limits = ctx.settings.render
    prepare = ctx.prepared.get
    context = build_context(replace(ranked, sections=sections), target.name,
                            lambda fact: prepare(fact.content).item(fact.tier, fact.confidence,
                                                                    fact.reinforcement_count))
    return render_template(limits.template_dirs, target.template, context, timeout_s=limits.timeout_s,
                           max_chars=limits.max_output_chars, max_memory_mb=limits.max_memory_mb)
