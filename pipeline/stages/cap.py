"""cap: the shared cap, applied with the target's budget and section boundary."""

from __future__ import annotations

from ..cap import cap_text
from ..context import StageContext
from ..model import CappedRender, Rendered
from ..registry import NoOptions, stage


@stage("cap", per_target=True)
def cap(rendered: Rendered, *, ctx: StageContext, options: NoOptions) -> CappedRender:
    """Fit the render into the target's token budget at section boundaries."""
    target = rendered.target
    capped = cap_text(rendered.text, budget=target.budget, counter=ctx.counter, boundary=target.boundary,
                      note=target.note)
    return CappedRender(capped, rendered)
