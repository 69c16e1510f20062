"""The defaults of a fact, each written once (as mkdocs' ``config/defaults.py``), for every way a fact comes in.

A leaf: it imports nothing, so every floor may read it. Defaults a user can set live in the settings schema
(:mod:`pipeline.config.sections`) instead; these are the ones no setting changes. The tables' DDL
(store/sqlite/schema.py, store/postgres/schema.py) keeps its own ``DEFAULT 0.7``, as the seed's schema wrote
it, and a test checks that it equals :data:`DEFAULT_CONFIDENCE`. SQL takes these as bound parameters.
"""

from __future__ import annotations

from typing import Final

# A fact given none (add, promote, import, the tools, the page), and a row another tool left NULL.
DEFAULT_CONFIDENCE: Final = 0.7
# A fact given no tier (add, promote, replace, import, the tools, the page).
DEFAULT_TIER: Final = "long_term"
# A fact or memory filed under no topic.
DEFAULT_TOPIC: Final = "general"
