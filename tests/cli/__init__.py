"""Tests of pipeline/cli: the `persona` command through the runner and as a real process."""
