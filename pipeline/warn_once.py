"""Warn once per distinct problem, and again once it has recovered and come back.

Hot paths (the injector runs on every prompt build) must not flood the
host's log with one warning per call, yet a problem that comes back after a
recovery is news and must be said again.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class ProblemLog:
    """A warning log that remembers what it has already said."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def warn(self, message: str) -> None:
        """Log ``message`` as a warning unless it is already standing."""
        with self._lock:
            if message in self._said:
                return
            self._said.add(message)
        self._logger.warning(message)

    def recovered(self) -> None:
        """Everything works again: any problem that comes back is reported afresh."""
        if self._said:
            with self._lock:
                self._said.clear()


class TakingHandler(logging.Handler):
    """A log handler that hands each record to ``take``."""

    def __init__(self, take: Callable[[logging.LogRecord], None], level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.take = take

    def emit(self, record: logging.LogRecord) -> None:
        self.take(record)


@contextmanager
def noting(take: Callable[[logging.LogRecord], None]) -> Iterator[None]:
    """Hand ``take`` each warning logged (at the root, WARNING and above) or shown by :mod:`warnings` meanwhile, a
    shown one as a record of its message; both still reach the user as before. A run that said something is one
    whose answer a fast path must not record: it would not say it again."""
    root, shown = logging.getLogger(), warnings.showwarning
    handler = TakingHandler(take, logging.WARNING)
    root.addHandler(handler)

    def show(*args: Any, **kwargs: Any) -> None:
        take(logging.makeLogRecord({"msg": str(args[0])}))
        shown(*args, **kwargs)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
        root.removeHandler(handler)
