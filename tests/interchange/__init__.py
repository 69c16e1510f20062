"""Tests of pipeline/interchange: imports in every format, export, and `persona edit`'s file, on both backends."""
