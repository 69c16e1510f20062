"""Tests of pipeline/stages: the declarative pipeline, its stages, the fingerprint and a render's cost."""
