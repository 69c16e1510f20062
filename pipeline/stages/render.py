"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from ..context import StageContext
from ..model import RankedPersona, Rendered
from ..registry import NoOptions, stage
from ..templating import build_context, render_template


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes."""
    target = ctx.current_target
    limits = ctx.settings.render
    text = render_template(limits.template_dirs, target.template, build_context(ranked, target.name),
                           timeout_s=limits.timeout_s, max_chars=limits.max_output_chars,
                           max_memory_mb=limits.max_memory_mb)
    return Rendered(text, ranked, target)
