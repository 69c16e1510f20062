"""render: the ranked persona through the target's Jinja template."""

from __future__ import annotations

from dataclasses import replace

from ..render.model import RankedPersona, RankedSection, Rendered
from ..render.region_layout import RegionLayout, dressed, dressed_boundary, layout_of
from ..render.templating import render_sections, seen_key
from ..render.users_text import pieces, users_lines, without_users_text
from .context import StageContext
from .registry import NoOptions, stage


@stage("render", per_target=True)
def render(ranked: RankedPersona, *, ctx: StageContext, options: NoOptions) -> Rendered:
    """Render the target's template; the same input always gives the same bytes. A region leaves out what the
    user's own lines in its file already say, before the cap, so the budget counts only what it writes, and reads
    well beside them (:mod:`pipeline.render.region_layout`)."""
    target = ctx.current_target
    if target.output != "region":
        return Rendered(template_text(ranked, ranked.sections, ctx), ranked, target)
    lines = users_lines(target.path, ctx.settings.render.max_region_file_bytes)
    ranked = without_users_text(ranked, pieces(lines), explain=ctx.explain)
    layout = layout_of(lines)
    text = template_text(ranked, ranked.sections, ctx, layout)
    return Rendered(text, ranked, replace(target, boundary=dressed_boundary(target.boundary, layout)), layout)


def template_text(ranked: RankedPersona, sections: tuple[RankedSection, ...], ctx: StageContext,
                  layout: RegionLayout | None = None) -> str:
    """The current target's template with ``sections`` of ``ranked`` (a region's dressed for its file's
    ``layout``): the bytes a render of the profile's last run gave for what the template sees of them, else
    rendered now (the full render here, the fit's tries in cap: after an edit, most of the fit's tries show what
    they showed before)."""
    target = ctx.current_target
    seen = seen_key(sections)
    key = ("render", ctx.template_key(target), layout, seen)
    text = ctx.prepared.reused(key)
    if text is None:
        text = render_sections(ranked, sections, target, ctx.settings.render, ctx.prepared, seen)
        if layout is not None:
            text = dressed(text, target.boundary, layout)
        ctx.prepared.record(key, text)
    return str(text)
