"""Old module paths, kept for one release: importing one warns once and gives the module that replaced it.

Third-party stages and scripts imported some modules by their old paths. An
alias in ``sys.modules`` keeps those imports working without a shim file
beside each new module, so the tree shows only the names that say what is
inside (``store/fact_row.py``, not ``store/fact.py`` beside ``store/facts.py``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType

# old path -> the module that holds its names now
MOVED: dict[str, str] = {
    "pipeline.registry": "pipeline.stages.registry",
    "pipeline.context": "pipeline.stages.context",
    "pipeline.model": "pipeline.render.model",
    "pipeline.store.fact": "pipeline.store.fact_row",
    "pipeline.store.erase": "pipeline.store.erasure",
    "pipeline.store.detect": "pipeline.store.supersede_rules",
    "pipeline.schedule.erase": "pipeline.schedule.forget",
    "pipeline.integrations.hermes_session": "pipeline.integrations.hermes_binding",
    # the interchange with the outside left the store for its own floor (issue 37)
    "pipeline.store.importing": "pipeline.interchange.importing",
    "pipeline.store.edit": "pipeline.interchange.edit",
    "pipeline.store.edit_file": "pipeline.interchange.edit_file",
    "pipeline.store.facts_file": "pipeline.interchange.facts_file",
    "pipeline.store.fact_entry": "pipeline.interchange.fact_entry",
    **{f"pipeline.store.formats{part}": f"pipeline.interchange.formats{part}" for part in (
        "", ".registry", ".source", ".markdown", ".facts", ".hermes", ".instructions", ".lines", ".mem0",
        ".persona_md")},
}


class _OldPaths:
    """Finds only the old paths; each one is loaded as the module that replaced it.

    A finder and loader by their protocol, not by ``importlib.abc``'s classes: importing those costs every
    process (the CLI's ``--help`` included) several milliseconds.
    """

    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname in MOVED else None  # type: ignore[arg-type]

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = MOVED[spec.name]
        # stacklevel 2 lands in the import machinery, which warnings skips: the warning names the importer.
        warnings.warn(f"{spec.name} is deprecated; import from pipeline (or {new})", DeprecationWarning,
                      stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its new name."""


def install() -> None:
    """Make the old paths importable (once per process)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        # First, not last: an old package's alias has the new package's __path__, through which the path finder
        # would load a submodule (pipeline.store.formats.mem0) a second time under its old name.
        sys.meta_path.insert(0, _OldPaths())
