"""`persona status`'s settings without pydantic: what the full path resolved, recorded under the key that made it.

Loading the settings (pydantic and its models) costs more than the status itself. Each time status runs the full
path it records, as JSON, the resolved values of the sections status reads, under the settings' key: the global
options, the working directory, the environment that shapes settings (names matched case-insensitively, as
pydantic-settings matches them), the package and the state of every config file searched (found or not). The
record is written only when each value, read back, equals what the settings resolved, and when no config file
changed while they loaded. The next status with the same key (:func:`lookup`) reads the record with the standard
library alone; a field the record does not hold (a value JSON cannot carry as it is) ends the fast path
(:class:`NotRecorded`), and status runs the full path, exactly as before. One file per key,
``<hermes home>/mnemosyne/persona-tier/settings/<digest>.json``, 0600, written whole or not at all.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import deliver
from ..warn_once import TakingHandler, noting
from .plain import CliState

if TYPE_CHECKING:
    from ..config.schema import Settings

log = logging.getLogger(__name__)
FORMAT = 1
MAX_RECORD_BYTES = 1 << 20
SECTIONS = ("cap", "injection", "render", "retention", "store", "supersede", "triggers")
DEFAULTABLE = ("store.path", "injection.file")  # the home-relative paths load_settings fills (Settings.is_default)
OUTPUT_JSON = "output_json"  # the settings' part of the render fingerprint (stages/fingerprint.py), kept as made
PATH_TAG = "__path__"
T = TypeVar("T")


class NotRecorded(BaseException):
    """A setting the record does not hold: status leaves the fast path for the full one. A BaseException, so no
    ``except Exception`` on the way can take it for a problem of the status itself."""


class Section:
    """One section's recorded values, read as the settings' attributes."""

    def __init__(self, where: str, values: Mapping[str, Any]) -> None:
        self._where, self._values = where, dict(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._values:
            raise NotRecorded(f"{self._where}.{name}")
        return self._values[name]


class RecordedSettings:
    """The settings as a record holds them: the sections status reads, the targets, which paths were defaulted
    and the render fingerprint's settings part."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._sections = {name: Section(name, _decoded(values)) for name, values in document["settings"].items()}
        self.targets = {name: Section(f"targets.{name}", _decoded(values))
                        for name, values in document["targets"].items()}
        self._defaulted = frozenset(document["defaulted"])
        self._derived: dict[str, Any] = {OUTPUT_JSON: document[OUTPUT_JSON].encode("utf-8")}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self._sections:
            raise NotRecorded(name)
        return self._sections[name]

    def is_default(self, key: str) -> bool:
        return key in self._defaulted

    def derived(self, name: str, make: Callable[[Any], T]) -> T:
        if name not in self._derived:
            self._derived[name] = make(self)
        return self._derived[name]  # type: ignore[no-any-return]


def digest(cli: CliState, cwd: str, environ: Mapping[str, str]) -> str:
    """The digest naming one key's record: the global options, the working directory and the environment that
    shapes settings (each name matched whatever its case)."""
    import hashlib

    env = sorted((name, value) for name, value in environ.items() if _shapes(name))
    options = [[str(path) for path in cli.config_files], cli.env_name, cli.set_pairs, cli.db]
    text = json.dumps([FORMAT, options, cwd, env], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _shapes(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(deliver.ENV_PREFIXES) or upper.endswith(deliver.ENV_SUFFIXES) or upper in deliver.ENV_NAMES


def record_path(key: str, environ: Mapping[str, str]) -> str:
    return os.path.join(deliver.hermes_home(environ), "mnemosyne", "persona-tier", "settings", key + ".json")


def lookup(cli: CliState) -> RecordedSettings | None:
    """The recorded settings of this key when every part still matches; None otherwise (the full path runs)."""
    try:
        document = _read(record_path(digest(cli, os.getcwd(), os.environ), os.environ))
        if document is None or document.get("format") != FORMAT or document.get("package") != deliver.package_stamp():
            return None
        if deliver.states(list(document["inputs"])) != document["inputs"]:
            return None
        return RecordedSettings(document)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _read(path: str) -> dict[str, Any] | None:
    """The record at ``path``: a regular file of this user's, private to them; None for anything else."""
    import stat

    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.geteuid():
            return None
        document = json.loads(os.read(descriptor, MAX_RECORD_BYTES).decode("utf-8", "surrogateescape"))
    finally:
        os.close(descriptor)
    return document if isinstance(document, dict) else None


@contextmanager
def recording(cli: CliState) -> Iterator[None]:
    """Around a status that reads its settings: once it is done, record them, unless they were recorded ones, or
    anything was logged or warned meanwhile (the fast path would not say it again)."""
    if cli.loaded():
        yield
        return
    from ..inject.delivery import before_settings

    early = before_settings(cli.config_files)
    said: list[str] = []
    with noting(lambda record: said.append(record.getMessage())):
        yield
    if not said:
        record(cli, early)


@contextmanager
def held() -> Iterator[list[Callable[[], None]]]:
    """Whatever is logged or warned meanwhile, held back: each entry of the list shows one as it would have been
    shown (the fast path shows them once it has its answer; when it gives up, the full path says them)."""
    root, shown = logging.getLogger(), warnings.showwarning
    later: list[Callable[[], None]] = []
    handlers, root.handlers = root.handlers, [TakingHandler(lambda record: later.append(lambda: root.handle(record)))]
    warnings.showwarning = lambda *args, **kwargs: later.append(lambda: warnings.showwarning(*args, **kwargs))
    try:
        yield later
    finally:
        warnings.showwarning = shown
        root.handlers = handlers


def record(cli: CliState, early: dict[str, str] | None) -> None:
    """Record the settings ``cli`` resolved, when each recorded value reads back as resolved and no config file
    changed while they loaded (``early``: the config files' states taken before). A record that cannot be
    written is left out."""
    if early is None or not cli.loaded():
        return
    settings = cli.settings()
    if settings.store.url is not None:  # a server's URL (and its password) is never written down
        return
    document = _document(settings, early)
    if document is None or deliver.states(list(early)) != early:
        return
    try:
        data = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogateescape")
        path = record_path(digest(cli, os.getcwd(), os.environ), os.environ)
        deliver.write_private(path, data)
        deliver.keep_latest(os.path.dirname(path))
    except (OSError, ValueError) as error:  # the next status takes the full path again
        log.debug("the settings will not be recorded: %s", error)


def _document(settings: Settings, early: dict[str, str]) -> dict[str, Any] | None:
    document = {
        "format": FORMAT, "package": deliver.package_stamp(), "inputs": {**_more_inputs(), **early},
        "settings": {name: _encoded(getattr(settings, name)) for name in SECTIONS},
        "targets": {name: _encoded(target) for name, target in settings.targets.items()},
        "defaulted": [key for key in DEFAULTABLE if settings.is_default(key)],
        OUTPUT_JSON: _output_json(settings).decode("utf-8"),
    }
    return document if _reads_back(settings, json.loads(json.dumps(document))) else None


def _more_inputs() -> dict[str, str]:
    data_dir = os.environ.get("MNEMOSYNE_DATA_DIR")
    return deliver.states([str(Path(data_dir).expanduser() / "config.yaml")]) if data_dir else {}


def _reads_back(settings: Settings, document: dict[str, Any]) -> bool:
    """Each recorded value, read back from the record, equals (with its type) what the settings resolved."""
    recorded = RecordedSettings(document)
    pairs = [(getattr(settings, name), getattr(recorded, name), document["settings"][name]) for name in SECTIONS]
    pairs += [(target, recorded.targets[name], document["targets"][name]) for name, target in settings.targets.items()]
    same = all(_same(getattr(real, field), getattr(read, field)) for real, read, fields in pairs for field in fields)
    return same and recorded.derived(OUTPUT_JSON, bytes) == _output_json(settings)


def _output_json(settings: Settings) -> bytes:
    """The render fingerprint's settings part, as :func:`pipeline.stages.fingerprint.config_hash` makes it."""
    from ..stages.fingerprint import output_json

    return output_json(settings)


def _same(real: Any, read: Any) -> bool:
    if type(real) is not type(read) or real != read:
        return False
    if isinstance(real, list | tuple):
        return all(_same(a, b) for a, b in zip(real, read, strict=True))
    if isinstance(real, dict):
        return all(_same(real[key], read[key]) for key in real)
    return True


def _encoded(section: Any) -> dict[str, Any]:
    """A section's fields that JSON carries as they are (a Path tagged), by name; any other field is left out."""
    found = {}
    for name in type(section).model_fields:
        value = _value(getattr(section, name))
        if value is not _LEFT_OUT:
            found[name] = value
    return found


_LEFT_OUT = object()


def _value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Path):
        return {PATH_TAG: str(value)}
    if isinstance(value, list):
        items = [_value(item) for item in value]
        return _LEFT_OUT if any(item is _LEFT_OUT for item in items) else items
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        fields = {key: _value(item) for key, item in value.items()}
        return _LEFT_OUT if any(item is _LEFT_OUT for item in fields.values()) else fields
    return _LEFT_OUT


def _decoded(values: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _read_value(value) for name, value in values.items()}


def _read_value(value: Any) -> Any:
    if isinstance(value, list):
        return [_read_value(item) for item in value]
    if isinstance(value, dict):
        if list(value) == [PATH_TAG]:
            return Path(value[PATH_TAG])
        return {key: _read_value(item) for key, item in value.items()}
    return value
