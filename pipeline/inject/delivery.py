"""The full path's side of the fast path (:mod:`pipeline.deliver`): a replayable run is recorded while it runs,
and its answer kept with everything it read.

:func:`recording` opens a recording of the run's inputs (:mod:`pipeline.inputs`: the run notes each as it reads
it) and notes the package's code; :func:`keep` files the answer under the store the run read
(:mod:`pipeline.fs.records`), only when the recording can be compared (no FIFO, no server store, one SQLite
profile), the run said nothing on the way (a warning: the fast path would not say it again), and every input is
still in the state the run first saw (a write or a render that landed meanwhile: the next run records).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .. import deliver, inputs
from ..clock import to_db, utc_now
from ..fs import records
from ..store import identity
from ..warn_once import noting

log = logging.getLogger(__name__)


@dataclass
class Delivery:
    """A replayable run under way: what it noted, and whatever it said meanwhile."""

    recorder: inputs.Recorder
    said: list[logging.LogRecord] = field(default_factory=list)


@contextmanager
def recording() -> Iterator[Delivery]:
    """Record the inputs of the run inside the block; it answers as it would have either way."""
    with inputs.recording() as recorder:
        delivery = Delivery(recorder)
        with noting(delivery.said.append):
            inputs.note_code()
            yield delivery


def keep(delivery: Delivery, output: str, *, request: list[str] | None = None) -> bool:
    """Keep ``output`` as the answer to ``request`` (default: the console script's arguments) with what the run
    read, when it can be replayed (see the module); whether it was kept. A record that cannot be written is left
    out (at debug: the next run takes the full path again)."""
    request = deliver.REQUEST if request is None else request
    store = _store(delivery) if request is not None and output and not delivery.said else None
    if request is None or store is None:
        return False
    db, profile, store_id = store
    entries = inputs.as_list(delivery.recorder)
    if not inputs.holds(entries):
        return False  # an input moved while the run read it: the next run records
    try:
        home = records.folder()
        if not _listed(home, db, store_id):
            return False
        records.keep_delivery(home, deliver.request_key(request, os.getcwd()), store_id, profile,
                              {"inputs": entries, "output": output})
    except (OSError, RuntimeError, ValueError) as error:
        log.debug("the answer was not recorded: %s", error)
        return False
    return True


def _store(delivery: Delivery) -> tuple[str, str, str] | None:
    """The one SQLite profile the run read (its file, profile and store id); None for none, several, or a
    recording that cannot be compared."""
    recorder = delivery.recorder
    if recorder.unusable is not None:
        log.debug("the answer will not be recorded: %s", recorder.unusable)
        return None
    read = [(subject, state) for (kind, subject), state in recorder.entries.items() if kind == identity.KIND]
    if len(read) != 1 or not isinstance(read[0][1], list):
        return None
    db, profile = json.loads(read[0][0])
    return str(db), str(profile), str(read[0][1][0])


def _listed(home: str, db: str, store_id: str) -> bool:
    """Whether the store lists ``home`` among the records folders a forget sweeps (listed now if not yet)."""
    marker = os.path.join(home, "deliveries", store_id, ".listed")
    if records.read(marker) is not None:
        return True
    if not identity.add_record_folder(db, home, to_db(utc_now())):
        return False
    records.write(marker, {"store": store_id})
    return True
