"""Tests of pipeline/hosts: every host module registered, its declarations sound, and the CLI built from them.

Not tests/hosts/, which runs the real host CLIs (`make test-hosts`).
"""
