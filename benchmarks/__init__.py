"""Benchmarks: `make bench` prints figures; nothing here asserts a time."""
