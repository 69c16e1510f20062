"""The full path's side of the delivery snapshot (:mod:`pipeline.deliver`): what a delivery depends on, recorded
with what it printed, so the next identical request is answered with the standard library alone.

A delivery depends on the request (arguments, working directory, environment), the store's counters, and the
files it read or looked for: every config file searched (found or not), the Hermes home's sticky profile and
Mnemosyne's bank switch, each target's user templates, the profile's target files, and the reader's project
(``.git`` on the way up and its config). The counters and file states are taken before the delivery runs and
compared after it: a delivery that rendered, or raced a write, is not recorded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import deliver
from ..config.files import local_twin
from ..config.schema import Settings
from ..config.targets import resolve_target
from ..config.urls import store_target
from ..errors import PersonaError
from ..fs.locations import default_config_path, hermes_home
from ..render.template_sources import search_path
from ..warn_once import noting

log = logging.getLogger(__name__)


@dataclass
class Delivery:
    """A delivery under way: its store, profile, and the key's parts as they were before it ran."""

    db: str
    profile: str
    seen: tuple[int, int]
    inputs: dict[str, str]
    said: list[logging.LogRecord]

    def finish(self, output: str, *, request: list[str] | None = None) -> None:
        """Record ``output`` as the answer to ``request`` (default: the console script's arguments), unless the
        delivery said anything (a warning, on stderr: the fast path would not say it) or a key part moved while
        it ran."""
        request = deliver.REQUEST if request is None else request
        if self.said or request is None:
            return
        try:
            deliver.record((request, os.getcwd(), os.environ), db=self.db, profile=self.profile,
                           seen=self.seen, inputs=self.inputs, output=output)
        except OSError as error:  # the delivery stands; the next one takes the full path again
            log.debug("the delivery was not recorded: %s", error)


def config_paths(config_files: list[Path]) -> list[str]:
    """The config files searched (found or not, each with its local twin), and what finds the Hermes home and
    Mnemosyne's bank: all known before the settings load, so their states can be taken first."""
    named = config_files or [Path(p) for p in os.environ.get("MNEMOSYNE_PERSONA_CONFIG", "").split(os.pathsep) if p]
    configs = [path.expanduser() for path in (*named, default_config_path())]
    home = hermes_home()
    return [*(str(p) for path in configs for p in (path, local_twin(path))), *deliver.home_inputs(os.environ),
            str(home / "config.yaml"), str(home / "mnemosyne" / "config.yaml")]


def before_settings(config_files: list[Path]) -> dict[str, str] | None:
    """The states of :func:`config_paths` before the settings are read (None when one cannot be read): a file
    changed while they load then differs from the key, and the delivery is not recorded."""
    try:
        return deliver.states(config_paths(config_files))
    except OSError:
        return None


def input_paths(settings: Settings, profile: str, *, config_files: list[Path], project: Path | None) -> list[str]:
    """Every path a delivery of ``profile`` reads or looks for (see the module)."""
    paths = config_paths(config_files)
    if os.environ.get("MNEMOSYNE_DATA_DIR"):
        paths.append(str(Path(os.environ["MNEMOSYNE_DATA_DIR"]).expanduser() / "config.yaml"))
    for name, target in settings.targets.items():
        for folder in search_path(settings.render.template_dirs)[:-1]:  # the shipped ones are the package's
            paths.append(os.path.join(folder, target.template))
        resolved = resolve_target(settings, name, profile=profile)
        if not resolved.in_store:
            paths.append(str(resolved.path))
    if project is not None:
        paths += deliver.project_inputs(str(project))
    return list(dict.fromkeys(paths))


def begin(settings: Settings, profile: str | None, *, early: dict[str, str] | None, config_files: list[Path],
          project: Path | None, session_id: str | None) -> Delivery | None:
    """The key's parts before a delivery runs (``early``: :func:`before_settings`); None when it cannot be
    recorded (a PostgreSQL store, a session's pinned snapshot, a store not there yet, a key part that cannot be
    read)."""
    target = store_target(settings)
    if early is None or session_id is not None or not isinstance(target, Path):
        return None
    db, who = str(target.absolute()), profile or settings.store.profile
    try:
        seen = deliver.counters(db, who)
        paths = input_paths(settings, who, config_files=config_files, project=project)
        inputs = {**deliver.states(paths), **early}
    except (OSError, PersonaError, ValueError) as error:
        log.debug("the delivery will not be recorded: %s", error)
        return None
    return None if seen is None else Delivery(db, who, seen, inputs, [])


@contextmanager
def watching(delivery: Delivery | None) -> Iterator[None]:
    """Note, on ``delivery``, each warning the delivery logs or raises while it runs (they reach the user as
    before): a delivery that says something is not recorded."""
    if delivery is None:
        yield
        return
    with noting(delivery.said.append):
        yield


