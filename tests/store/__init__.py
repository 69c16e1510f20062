"""Tests of pipeline/store: both backends, imports and exports, supersession, forget, faults and concurrency."""
