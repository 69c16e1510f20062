"""Fixtures of the interchange's tests: the store's own (an opened store on each backend)."""

from __future__ import annotations

from ..store.conftest import store

__all__ = ["store"]
