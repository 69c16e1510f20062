"""The built-in stages. Importing this package registers them."""

from . import cap, extract, rank, render, write

__all__ = ["cap", "extract", "rank", "render", "write"]
