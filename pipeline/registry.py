"""Deprecated: this path moved to :mod:`pipeline.stages.registry`; import public names from :mod:`pipeline`.

Kept for one release so third-party stages written against it keep working.
"""

import warnings

from .stages.registry import ENTRY_POINT_GROUP, NoOptions, StageOptions, StageSpec, get_stage, known_stages, stage

__all__ = ["ENTRY_POINT_GROUP", "NoOptions", "StageOptions", "StageSpec", "get_stage", "known_stages", "stage"]

warnings.warn("pipeline.registry is deprecated; import from pipeline (or pipeline.stages.registry)", DeprecationWarning,
              stacklevel=2)
