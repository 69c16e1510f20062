"""The environment as a settings source: its variable names, and the checks that keep a typo from going unnoticed.

``MNEMOSYNE_PERSONA_*`` names (``__`` for nesting) are read by pydantic-settings;
the existing tier's five flat names are mapped onto their nested fields.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import BaseModel

from .. import inputs
from ..errors import ConfigError
from .files import ConfigLayer, Path_, nest

ENV_PREFIX = "MNEMOSYNE_PERSONA_"
CONFIG_ENV = "MNEMOSYNE_PERSONA_CONFIG"
ENV_SWITCHER = "MNEMOSYNE_ENV"
# Unprefixed variables that decide paths: checked for undecodable bytes like our own.
READ_ENV = frozenset({ENV_SWITCHER, "HERMES_HOME", "MNEMOSYNE_DATA_DIR"})

# The existing tier's flat variables, each mapped onto its nested field. Kept
# so that users' current environments keep working unchanged.
LEGACY_ENV = {
    "MNEMOSYNE_PERSONA_ENABLED": ("injection", "enabled"),
    "MNEMOSYNE_PERSONA_FILE": ("injection", "file"),
    "MNEMOSYNE_PERSONA_TOKEN_CAP": ("cap", "token_cap"),
    "MNEMOSYNE_PERSONA_INTERVAL": ("triggers", "interval"),
    "MNEMOSYNE_PERSONA_DAILY_SYNC_HOUR": ("triggers", "daily_sync_hour"),
}


def _env_label(path: Path_) -> str:
    return "env " + ENV_PREFIX + "__".join(path).upper()


def _legacy_label(path: Path_) -> str:
    names = [name for name, target in LEGACY_ENV.items() if target == path]
    return f"env {names[0]} (legacy)" if names else "legacy env"


def _legacy_env(found: dict[str, str]) -> dict[str, Any]:
    """The five legacy flat variables, nested onto their fields."""
    return nest({path: found[name] for name, path in LEGACY_ENV.items() if name in found})


def env_layers(model: type[BaseModel]) -> list[ConfigLayer]:
    # Every variable of ours, whatever its case, as pydantic-settings matches them: one input of a recorded answer.
    found = inputs.environ_prefixed(ENV_PREFIX)
    legacy = ConfigLayer("legacy-env", _legacy_env(found), label=_legacy_label)
    ours = [name for name in found if name not in LEGACY_ENV and name != CONFIG_ENV]
    if not ours:
        return [legacy, ConfigLayer("env", {}, label=_env_label)]
    from pydantic_settings import EnvSettingsSource, SettingsError

    try:
        values = EnvSettingsSource(model, case_sensitive=False, env_prefix=ENV_PREFIX,  # type: ignore[arg-type]
                                   env_nested_delimiter="__")()
    except SettingsError as error:
        # Structured settings (targets, pipeline, a whole section) are read from the environment as JSON.
        field = re.search(r'field "([^"]+)"', str(error))
        name = f"{ENV_PREFIX}{field.group(1).upper()}" if field else f"a {ENV_PREFIX}* variable"
        raise ConfigError([f"environment variable {name} must hold JSON for this structured setting"]) from None
    return [legacy, ConfigLayer("env", values, label=_env_label)]


def environment_problems(model: type[BaseModel]) -> list[str]:
    """Variables we would read wrongly or not at all, each named.

    pydantic-settings skips prefixed names that map to no setting, and reads
    lower-case names as if they were upper case; both are errors here, so a
    typo never goes unnoticed and every variable is read by one rule.
    Values that are not valid UTF-8 (undecodable bytes) are errors too.
    """
    fields = {name.upper() for name in model.model_fields}
    known = set(LEGACY_ENV) | {CONFIG_ENV}
    problems = []
    found = {**inputs.environ_prefixed(ENV_PREFIX), **{name: value for name in READ_ENV
                                                        if (value := inputs.environ(name)) is not None}}
    for name in sorted(found):
        if name in READ_ENV or name.upper().startswith(ENV_PREFIX):
            try:
                found[name].encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"environment variable {name} is not valid UTF-8")
                continue
        if not name.upper().startswith(ENV_PREFIX) or name in known:
            continue
        if name != name.upper():
            problems.append(f"environment variable {name} is not upper case; persona-tier reads only "
                            f"upper-case names (did you mean {name.upper()}?)")
        elif name[len(ENV_PREFIX):].split("__", 1)[0] not in fields:
            problems.append(f"unknown environment variable {name}{_closest_env_hint(name, model)}")
    return problems


def _closest_env_hint(name: str, model: type[BaseModel]) -> str:
    candidates = [f"{ENV_PREFIX}{field.upper()}__" for field in model.model_fields] + list(LEGACY_ENV)
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""
