"""The contract with tables that may be Mnemosyne's (or another tool's), shared by both backends.

Each backend checks an existing table against it before changing anything.
"""

# The columns persona-tier reads and writes in tables that may be Mnemosyne's (or another tool's).
# An existing table without one of them is refused before anything is changed.
REQUIRED_COLUMNS = {
    "memoria_persona": ("id", "session_id", "tier", "topic", "content", "confidence", "source_memory_id",
                        "created_at", "last_reinforced_at", "reinforcement_count", "promotion_reason"),
    "memoria_preferences": ("id", "session_id", "preference", "topic", "evolution", "context_snippet",
                            "source_memory_id"),
    "working_memory": ("id", "content", "source", "timestamp", "session_id", "importance", "metadata_json",
                       "created_at"),
    "episodic_memory": ("id", "content", "source", "timestamp", "session_id", "importance", "metadata_json",
                        "created_at"),
    "memoria_instructions": ("topic", "source_memory_id"),
}

# The columns of memoria_persona whose change changes a render: a write to any of them, by any tool, moves the
# profile's change counter (each backend's triggers; see docs/store.md, "What persona-tier adds to the table").
WATCHED_COLUMNS = ("session_id", "tier", "topic", "content", "confidence", "reinforcement_count",
                   "last_reinforced_at")
# Our triggers on memoria_persona: the only thing persona-tier adds to a table that may be Mnemosyne's.
TRIGGER_PREFIX = "persona_seen_"

# A server session's setting, set by the tick lock's statement (postgres/locks.py TAKE): 'yes' when it took the
# lock, else 'no'; what is sent with it in its round trip reads it (render_rows.state_and_facts_if_changed).
HELD_SETTING = "persona.tick_held"
