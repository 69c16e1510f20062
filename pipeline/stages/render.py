"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from ..render.model import RankedPersona, Rendered
from ..render.templating import render_sections
from .context import StageContext
from .registry import NoOptions, stage


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes."""
    target = ctx.current_target
    return Rendered(render_sections(ranked, ranked.sections, target, ctx.settings.render, ctx.prepared), ranked,
                    target)
