"""This process's connection pools: one per database URL, opened on first use and closed at exit."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

Pool = ConnectionPool[psycopg.Connection[Any]]

POOL_MAX = 8  # per URL and process: workers and gateways hold a connection only for one operation

_POOLS: dict[str, Pool] = {}
_POOLS_LOCK = threading.Lock()


def pool_of(url: str) -> Pool | None:
    """The pool already open for ``url``, if any."""
    return _POOLS.get(url)


def shared_pool(url: str, open_pool: Callable[[], Pool]) -> Pool:
    """The pool for ``url``; the first caller opens it with ``open_pool`` while later ones wait."""
    with _POOLS_LOCK:
        pool = _POOLS.get(url)
        if pool is None:
            pool = _POOLS[url] = open_pool()
        return pool


def close_pool(url: str) -> None:
    """Close this process's connections to ``url`` (a worker done with a database, or a test)."""
    with _POOLS_LOCK:
        pool = _POOLS.pop(url, None)
    if pool is not None:
        pool.close(timeout=1)


def _close_pools() -> None:
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close(timeout=1)
        _POOLS.clear()


atexit.register(_close_pools)
