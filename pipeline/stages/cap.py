"""cap: fit the render into the target's budget, fairly across topics, with the section cap as the guard."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from pydantic import Field

from ..config.targets import ResolvedTarget, region_id
from ..render.fair_fit import fair_fit
from ..render.limits import limited
from ..render.model import CappedRender, RankedSection, Rendered
from ..render.notes import lazy_note
from ..render.section_cap import cap_text
from ..render.tokens import EitherLineEnd, ExactCounter
from .context import StageContext
from .registry import StageOptions, stage
from .render import template_text


class CapOptions(StageOptions):
    strategy: Literal["fair", "sections"] = Field(
        "fair",
        description="fair: drop the weakest facts across all topics first, so every topic whose best fact fits "
        "keeps it (renders the template a few dozen times when the budget is tight); sections: keep whole "
        "sections in rank order and skip those that do not fit (one render; whole topics can vanish).",
    )


@stage("cap", options=CapOptions, per_target=True)
def cap(rendered: Rendered, *, ctx: StageContext, options: CapOptions) -> CappedRender:
    """Fit the render into the target's token budget and its host's limits; the section cap guards the result."""
    target, ranked = rendered.target, rendered.ranked
    # A region takes its file's line ends, which the host reads: the budget holds for LF and CRLF alike.
    tokens = EitherLineEnd(ctx.counter) if target.output == "region" else ctx.counter
    counter = limited(tokens, target.budget, target.limits, _overhead(target))
    # The plain exact counter (no line ends to respell, no host limit) bounds a render by its parts' counts kept in
    # a SQLite file, for the next process (a server's worker lives on, and its round trips are counted).
    plain = counter if isinstance(counter, ExactCounter) and counter.exact and ctx.store.path is not None else None
    fit = None
    if options.strategy == "fair":
        fit = fair_fit(ranked.sections, rendered.text, budget=target.budget, counter=counter,
                       render=lambda sections: template_text(ranked, sections, ctx, rendered.layout),
                       note=lazy_note(target), boundary=target.boundary,
                       text_tokens=lambda texts: ctx.fact_tokens(texts, counter, ranked.sections), memo=ctx.prepared,
                       memo_key=ctx.template_key(target), count_texts=lambda texts: ctx.prepared.counts(texts, counter),
                       bound_of=None if plain is None else lambda text: ctx.render_bound(text, plain))
        if plain is not None and fit is not None and fit.exact and not fit.left_out:
            ctx.keep_segments(fit.text, plain)
    text = fit.text if fit is not None else rendered.text
    capped = cap_text(text, budget=target.budget, counter=counter, boundary=target.boundary,
                      note=lazy_note(target), tokens=fit.tokens if fit is not None else None,
                      exact=fit.exact if fit is not None else True)
    if counter is not tokens:  # report the text's real tokens (or their bound), not the limits' scaled units
        capped = replace(capped, tokens=tokens.count(capped.text) if capped.exact else tokens.bound(capped.text))
    # Without a fit, the fair fit found no fact fits beside its heading (the guard kept a heading alone), or no
    # fit was tried (sections): then the guard's sections are what is left.
    kept = fit.sections if fit is not None else () if options.strategy == "fair" and capped.partial else (
        ranked.sections)
    return CappedRender(capped, rendered, _surviving(kept, capped.kept_indexes),
                        fit.left_out if fit is not None else frozenset())


def _overhead(target: ResolvedTarget) -> str:
    """What the host reads of ours besides the rendered text: a region's marker lines and the blank line before."""
    if target.output != "region":
        return ""
    markers = region_id(target)
    return f"{markers.begin().decode()}\n{markers.end().decode()}\n\n"


def _surviving(sections: tuple[RankedSection, ...], indexes: tuple[int, ...] | None) -> tuple[RankedSection, ...]:
    """The sections the guard kept (a template renders one boundary-led chunk per section)."""
    if indexes is None:
        return sections
    return tuple(sections[index] for index in indexes if index < len(sections))
