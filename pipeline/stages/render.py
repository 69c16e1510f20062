"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from ..render.model import RankedPersona, Rendered
from ..render.templating import render_sections
from ..render.users_text import users_text, without_users_text
from .context import StageContext
from .registry import NoOptions, stage


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes. A region leaves out what the
    user's own lines in its file already say, before the cap, so the budget counts only what it writes."""
    target = ctx.current_target
    if target.output == "region":
        held = users_text(target.path, ctx.settings.render.max_region_file_bytes)
        ranked = without_users_text(ranked, held, explain=ctx.explain)
    # What the template sees decides the text: the same sections render to the bytes the last render kept.
    key = ("render", ctx.template_key(target), tuple(
        (s.topic, s.omitted, tuple((r.fact.content, r.fact.tier, r.fact.confidence, r.fact.reinforcement_count)
                                   for r in s.facts)) for s in ranked.sections))
    text = ctx.prepared.reused(key)
    if text is None:
        text = render_sections(ranked, ranked.sections, target, ctx.settings.render, ctx.prepared)
        ctx.prepared.record(key, text)
    return Rendered(text, ranked, target)
