"""Settings: the schema, its sources (environment, YAML files, overrides), targets, provenance and edits."""
