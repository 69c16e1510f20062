"""Tests of pipeline/inject: the injector, session snapshots, and what reaches a prompt."""
