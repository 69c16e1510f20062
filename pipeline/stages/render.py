"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from ..context import StageContext
from ..model import RankedPersona, Rendered
from ..registry import NoOptions, stage
from ..templating import build_context, make_environment, render_template


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes."""
    target = ctx.current_target
    env = ctx.cache.get("jinja")
    if env is None:
        env = ctx.cache["jinja"] = make_environment(ctx.settings.render.template_dirs)
    limits = ctx.settings.render
    text = render_template(env, target.template, build_context(ranked, target.name), timeout_s=limits.timeout_s,
                           max_chars=limits.max_output_chars)
    return Rendered(text, ranked, target)
