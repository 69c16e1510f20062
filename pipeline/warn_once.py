"""Warn once per distinct problem, and again once it has recovered and come back.

Hot paths (the injector runs on every prompt build) must not flood the
host's log with one warning per call, yet a problem that comes back after a
recovery is news and must be said again.
"""

from __future__ import annotations

import logging
import threading


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
