"""When to render: triggers, the due survey, retention and tick."""
