"""Resolve the settings from every source.

Sources, highest precedence first:

1. explicit overrides (``--set key.path=value`` or ``load_settings(overrides=...)``)
2. ``MNEMOSYNE_PERSONA_*`` environment variables, ``__`` for nesting (:mod:`pipeline.config.env`)
3. the five legacy flat variables (``MNEMOSYNE_PERSONA_TOKEN_CAP`` ...)
4. YAML files (:mod:`pipeline.config.files`)
5. the defaults declared in :mod:`pipeline.config.schema`

Nothing is read at import time: each :func:`load_settings` call re-reads the
environment and the files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import inputs
from ..errors import ConfigError
from ..fs.locations import default_db_path, default_persona_file
from ..fs.read import real_path
from .aliases import renamed
from .env import CONFIG_ENV, ENV_SWITCHER, env_layers, environment_problems
from .files import ConfigLayer, load_layers, nest, parse_value, resolve_config_files
from .provenance import Provenance, validate_layers
from .schema import Settings


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``["cap.token_cap=900"]`` into ``{"cap": {"token_cap": 900}}``.

    Values are read as YAML scalars, so ``900`` is an int and ``true`` a bool.
    """
    flat: dict[tuple[str, ...], Any] = {}
    problems = []
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            problems.append(f"--set {pair!r}: expected KEY.PATH=VALUE")
            continue
        flat[tuple(key.strip().split("."))] = parse_value(raw)
    if problems:
        raise ConfigError(problems)
    return nest(flat)


def _expand_dotted(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Accept both ``{"cap": {"token_cap": 9}}`` and ``{"cap.token_cap": 9}``."""
    return nest({tuple(key.split(".")): value for key, value in overrides.items()})


def load_settings(
    *,
    config_files: list[Path] | None = None,
    env_name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Resolve the settings from overrides, environment, legacy names, YAML and defaults."""
    return load_settings_with_provenance(config_files=config_files, env_name=env_name, overrides=overrides)[0]


def load_settings_with_provenance(
    *,
    config_files: list[Path] | None = None,
    env_name: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Settings, Provenance]:
    """Like :func:`load_settings`, also saying where every effective value came from."""
    files = resolve_config_files(config_files, environ=inputs.environ_prefixed(CONFIG_ENV))
    chosen_env = env_name if env_name is not None else inputs.environ(ENV_SWITCHER)
    layers = load_layers(files, chosen_env)
    layers += env_layers(Settings)
    layers.append(ConfigLayer("override", _expand_dotted(overrides or {})))
    layers = [renamed(layer) for layer in layers]
    extra_problems = environment_problems(Settings)
    settings, provenance = validate_layers(Settings, layers, extra_problems)
    settings = _with_default_paths(settings)
    settings._config_files = tuple(real_path(path) for path in files)
    return settings, provenance


def _with_default_paths(settings: Settings) -> Settings:
    """Fill the home-relative defaults now, so later calls agree whatever the environment does meanwhile.

    With one profile per Hermes user, the default persona file names the profile.
    """
    store, injection = settings.store, settings.injection
    defaulted = set()
    if store.path is None:
        store = store.model_copy(update={"path": default_db_path()})
        defaulted.add("store.path")
    if injection.file is None:
        file = default_persona_file()
        if settings.hermes.profile != "fixed":
            file = file.with_name("persona-{profile}.md")
        injection = injection.model_copy(update={"file": file})
        defaulted.add("injection.file")
    filled = settings.model_copy(update={"store": store, "injection": injection})
    filled._defaulted = frozenset(defaulted)
    return filled
