"""Tests of pipeline/store: both backends, supersession, forget, faults and concurrency."""
