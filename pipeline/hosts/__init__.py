"""One module per host: what each agent loads, its presets, limits and hook, declared as data (see registry.py)."""
