"""Files: defensive reads, atomic private writes, default locations and bounded YAML."""
