"""Tests of pipeline/schedule: triggers, tick, due profiles, retention and snapshot pruning."""
