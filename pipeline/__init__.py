"""persona-tier: the L3 persona tier for AI agents.

``__all__`` is the public API: import from ``pipeline``, not from the modules
behind it, which may move. Names load on first use, so ``import pipeline``
costs nothing and the CLI's start-up pays only for what a command needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from . import moved

moved.install()  # old module paths keep working for one release, with a DeprecationWarning

# name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # settings
    "Settings": "pipeline.config.schema",
    "ResolvedTarget": "pipeline.config.targets",
    "resolve_target": "pipeline.config.targets",
    "load_settings": "pipeline.config.load",
    "load_settings_with_provenance": "pipeline.config.load",
    # the store
    "PersonaStore": "pipeline.store.facts",
    "Fact": "pipeline.store.facts",
    "Promotion": "pipeline.store.facts",
    "Proposal": "pipeline.store.facts",
    "import_facts": "pipeline.interchange.facts_file",
    "read_facts_file": "pipeline.interchange.facts_file",
    "import_source": "pipeline.interchange.formats",
    # the pipeline and what its stages pass along
    "run_pipeline": "pipeline.stages.runner",
    "plan": "pipeline.stages.runner",
    "stage": "pipeline.stages.registry",
    "known_stages": "pipeline.stages.registry",
    "StageOptions": "pipeline.stages.registry",
    "NoOptions": "pipeline.stages.registry",
    "StageContext": "pipeline.stages.context",
    "Start": "pipeline.render.model",
    "PersonaFact": "pipeline.render.model",
    "FactSet": "pipeline.render.model",
    "RankedFact": "pipeline.render.model",
    "RankedSection": "pipeline.render.model",
    "RankedPersona": "pipeline.render.model",
    "Rendered": "pipeline.render.model",
    "CappedRender": "pipeline.render.model",
    "TargetReport": "pipeline.render.model",
    "get_counter": "pipeline.render.tokens",
    "cap_text": "pipeline.render.section_cap",
    # managed regions in files the user owns (CLAUDE.md, AGENTS.md, ...)
    "RegionId": "pipeline.fs.regions",
    "write_region": "pipeline.fs.region_file",
    "remove_region": "pipeline.fs.region_file",
    # scheduling
    "tick": "pipeline.schedule.tick",
    "tick_all": "pipeline.schedule.tick",
    "TickResult": "pipeline.schedule.tick",
    "evaluate": "pipeline.schedule.triggers",
    "status_data": "pipeline.schedule.triggers",
    "plan_retention": "pipeline.schedule.retention",
    "apply_retention": "pipeline.schedule.retention",
    # injection and session snapshots
    "PersonaInjector": "pipeline.inject.injector",
    "first_block": "pipeline.inject.first_block",
    "SessionSnapshots": "pipeline.inject.sessions",
    "Snapshot": "pipeline.store.snapshots",
    "Refresh": "pipeline.inject.sessions",
    "PersonaPromptMixin": "pipeline.integrations.hermes",
    # errors
    "PersonaError": "pipeline.errors",
    "ConfigError": "pipeline.errors",
    "StoreError": "pipeline.errors",
    "StoreUnavailable": "pipeline.errors",
    "NotFoundError": "pipeline.errors",
    "FactsFileError": "pipeline.errors",
    "EditError": "pipeline.errors",
    "EditConflict": "pipeline.errors",
    "ForgottenError": "pipeline.errors",
    "TemplateError": "pipeline.errors",
    "StageError": "pipeline.errors",
    "FileSystemError": "pipeline.errors",
    "InputError": "pipeline.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # the same names, for type checkers (a test keeps both lists equal)
    from .config.load import load_settings, load_settings_with_provenance
    from .config.schema import Settings
    from .config.targets import ResolvedTarget, resolve_target
    from .errors import (
        ConfigError,
        EditConflict,
        EditError,
        FactsFileError,
        FileSystemError,
        ForgottenError,
        InputError,
        NotFoundError,
        PersonaError,
        StageError,
        StoreError,
        StoreUnavailable,
        TemplateError,
    )
    from .fs.region_file import remove_region, write_region
    from .fs.regions import RegionId
    from .inject.first_block import first_block
    from .inject.injector import PersonaInjector
    from .inject.sessions import Refresh, SessionSnapshots
    from .integrations.hermes import PersonaPromptMixin
    from .interchange.facts_file import import_facts, read_facts_file
    from .interchange.formats import import_source
    from .render.model import (
        CappedRender,
        FactSet,
        PersonaFact,
        RankedFact,
        RankedPersona,
        RankedSection,
        Rendered,
        Start,
        TargetReport,
    )
    from .render.section_cap import cap_text
    from .render.tokens import get_counter
    from .schedule.retention import apply_retention, plan_retention
    from .schedule.tick import TickResult, tick, tick_all
    from .schedule.triggers import evaluate, status_data
    from .stages.context import StageContext
    from .stages.registry import NoOptions, StageOptions, known_stages, stage
    from .stages.runner import plan, run_pipeline
    from .store.facts import Fact, PersonaStore, Promotion, Proposal
    from .store.snapshots import Snapshot
