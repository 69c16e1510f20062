-- A Mnemosyne 3.15-shaped database: the tables and columns a real one has,
-- including the migrations' extra columns, and no `topic` in memoria_timelines.
CREATE TABLE working_memory (
    id TEXT PRIMARY KEY, content TEXT NOT NULL, source TEXT, timestamp TEXT,
    session_id TEXT DEFAULT 'default', importance REAL DEFAULT 0.5, metadata_json TEXT,
    veracity TEXT DEFAULT 'unknown', created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    memory_type TEXT DEFAULT 'unknown', consolidated_at TEXT, consolidation_claimed_at TEXT,
    recall_count INTEGER DEFAULT 0, last_recalled TIMESTAMP DEFAULT NULL, pinned INTEGER DEFAULT 0,
    valid_until TIMESTAMP DEFAULT NULL, superseded_by TEXT DEFAULT NULL, scope TEXT DEFAULT 'global',
    author_id TEXT DEFAULT NULL, author_type TEXT DEFAULT NULL, channel_id TEXT DEFAULT NULL,
    trust_tier TEXT DEFAULT 'STATED'
);
CREATE INDEX idx_wm_session ON working_memory(session_id);
CREATE TABLE episodic_memory (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, content TEXT NOT NULL, source TEXT,
    timestamp TEXT, session_id TEXT DEFAULT 'default', importance REAL DEFAULT 0.5, metadata_json TEXT,
    summary_of TEXT DEFAULT '', veracity TEXT DEFAULT 'unknown', created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tier INTEGER DEFAULT 1, degraded_at TEXT, memory_type TEXT DEFAULT 'unknown', binary_vector BLOB
);
CREATE TABLE memoria_timelines (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT DEFAULT 'default', date TEXT,
    message_idx INTEGER, description TEXT, source TEXT, source_memory_id TEXT
);
CREATE TABLE memoria_instructions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT DEFAULT 'default', message_idx INTEGER,
    instruction TEXT, active INTEGER DEFAULT 1, topic TEXT, context_snippet TEXT, source_memory_id TEXT
);
CREATE TABLE memoria_preferences (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT DEFAULT 'default', message_idx INTEGER,
    preference TEXT, topic TEXT, evolution TEXT, context_snippet TEXT, source_memory_id TEXT
);
CREATE INDEX idx_pref_session ON memoria_preferences(session_id);
CREATE TABLE memoria_persona (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT DEFAULT 'default',
    tier TEXT NOT NULL CHECK(tier IN ('permanent','long_term','working')), topic TEXT NOT NULL,
    content TEXT NOT NULL, confidence REAL DEFAULT 0.7, source_memory_id TEXT,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, last_reinforced_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    reinforcement_count INTEGER DEFAULT 0, promotion_reason TEXT
);
CREATE INDEX idx_persona_session_tier ON memoria_persona(session_id, tier);
CREATE INDEX idx_persona_tier_topic ON memoria_persona(tier, topic);
