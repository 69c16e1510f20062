"""Tests of pipeline/config: settings, their sources and precedence, presets, and fuzzed input."""
