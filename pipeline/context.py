"""Deprecated: this path moved to :mod:`pipeline.stages.context`; import public names from :mod:`pipeline`.

Kept for one release so third-party stages written against it keep working.
"""

import warnings

from .stages.context import StageContext

__all__ = ["StageContext"]

warnings.warn("pipeline.context is deprecated; import from pipeline (or pipeline.stages.context)", DeprecationWarning,
              stacklevel=2)
