"""Integrations with agent hosts."""
