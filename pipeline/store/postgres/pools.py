"""This process's connection pools: one per database URL, opened on first use and closed at exit."""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ... import caches

Pool = ConnectionPool[psycopg.Connection[Any]]

POOL_MAX = 8  # per URL and process: workers and gateways hold a connection only for one operation

MAX_POOLS = 64  # database URLs a process keeps a pool for; the least recently used is closed first


def _close(url: str, pool: Pool) -> None:
    pool.close(timeout=1)


_POOLS = caches.cache("pools.open", owner="process", key="a database URL", bound=MAX_POOLS, holds_text=False,
                      on_evict=_close)
_POOLS_LOCK = threading.Lock()  # one opener per URL: the others wait for its pool


def pool_of(url: str) -> Pool | None:
    """The pool already open for ``url``, if any."""
    found: Pool | None = _POOLS.get(url)
    return found


def shared_pool(url: str, open_pool: Callable[[], Pool]) -> Pool:
    """The pool for ``url``; the first caller opens it with ``open_pool`` while later ones wait."""
    with _POOLS_LOCK:
        pool: Pool | None = _POOLS.get(url)
        if pool is None:
            pool = open_pool()
            _POOLS.put(url, pool)
        return pool


def close_pool(url: str) -> None:
    """Close this process's connections to ``url`` (a worker done with a database, or a test)."""
    with _POOLS_LOCK:
        _POOLS.pop(url)  # closed as it goes


def _close_pools() -> None:
    with _POOLS_LOCK:
        _POOLS.clear()  # each closed as it goes


atexit.register(_close_pools)
