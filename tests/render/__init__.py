"""Tests of pipeline/render: the cap, the fair fit, and the template readers."""
