"""Into the system prompt: the injector, its two sources (file and store) and session snapshots."""
