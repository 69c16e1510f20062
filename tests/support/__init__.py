"""Helpers the tests share: databases on both backends, worker processes, a freezable proxy, Hermes-style threads."""
