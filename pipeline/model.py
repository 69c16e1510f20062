"""Deprecated: this path moved to :mod:`pipeline.render.model`; import public names from :mod:`pipeline`.

Kept for one release so third-party stages written against it keep working.
"""

import warnings

from .render.model import (
              CappedRender,
              FactSet,
              LeftOut,
              PersonaFact,
              RankedFact,
              RankedPersona,
              RankedSection,
              Rendered,
              Start,
              TargetReport,
              fact_label,
)

__all__ = ["CappedRender", "FactSet", "LeftOut", "PersonaFact", "RankedFact", "RankedPersona", "RankedSection",
           "Rendered", "Start", "TargetReport", "fact_label"]

warnings.warn("pipeline.model is deprecated; import from pipeline (or pipeline.render.model)", DeprecationWarning,
              stacklevel=2)
