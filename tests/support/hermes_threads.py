"""A host that calls hooks the way `hermes chat` does: each turn on a new thread, commands on another."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


def on_new_thread(action: Callable[[], Any], name: str = "run_agent") -> Any:
    """Run ``action`` on a brand-new thread (as Hermes runs each turn) and return its result."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = action()
        except BaseException as error:  # re-raised on the caller's thread
            box["error"] = error

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join(60)
    if "error" in box:
        raise box["error"]
    return box.get("result")


class LongLivedThread:
    """Hermes' process_loop: one thread that lives for the whole session and runs slash commands."""

    def __init__(self, name: str = "process_loop") -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], dict[str, Any], threading.Event] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            action, box, done = job
            try:
                box["result"] = action()
            except BaseException as error:
                box["error"] = error
            finally:
                done.set()

    def run(self, action: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}
        done = threading.Event()
        self._jobs.put((action, box, done))
        assert done.wait(60), "the long-lived thread did not answer"
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join(10)
