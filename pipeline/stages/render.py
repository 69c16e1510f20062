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
    text = render_template(env, target.template, build_context(ranked, target.name))
    return Rendered(text, ranked, target)
