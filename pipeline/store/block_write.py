"""A stored block's write on a server as one statement: what the write stage decides between its reads and its
writes (:func:`pipeline.stages.write.write`), decided by the server in the statement that writes.

The block read, the stale check (:func:`.runs.newest_generation`), the block's upsert and its NOTIFY
(:func:`.blocks.put_block`), the run's record and the trim of the old ones (:func:`.runs.record_run`), and a
commit that need not wait for the disk when the bytes are the same: each a statement, and the decision between
them a round trip, before. Sent after the profile's write claim and before the COMMIT, it is read once the
transaction committed: BEGIN, the claim, this and the COMMIT go in one round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import caches
from .backend import Connection, Cursor
from .blocks import CHANNEL, COLUMNS, StoredBlock, announcement
from .database import Database
from .runs import INSERT_COLUMNS, Outcome, RunRecord

NEWEST = ("SELECT MAX(generation) FROM persona_runs WHERE path = :path AND session_id = :profile AND outcome != "
          "'stale' AND generation <= COALESCE((SELECT generation FROM persona_state WHERE session_id = :profile), 0)")
FATE = ("SELECT previous, CASE WHEN newest IS NOT NULL AND :generation < newest THEN 'stale' WHEN previous IS NOT "
        "DISTINCT FROM :text THEN 'unchanged' ELSE 'written' END AS outcome FROM (SELECT (SELECT text FROM "
        f"persona_blocks WHERE profile = :profile AND target = :target) AS previous, ({NEWEST}) AS newest) AS now")
PUT = (f"INSERT INTO persona_blocks ({COLUMNS}) SELECT :profile, :target, :generation, :sha256, :text, :tokens, "
       ":counter, :rendered_at FROM fate WHERE outcome = 'written' ON CONFLICT (profile, target) DO UPDATE SET "
       "generation = excluded.generation, sha256 = excluded.sha256, text = excluded.text, tokens = excluded.tokens, "
       "counter = excluded.counter, rendered_at = excluded.rendered_at RETURNING 1")
# runs.TRIM's rows, but the new run (not seen by the statement it is in) is one of the newest ``keep``.
TRIM = ("DELETE FROM persona_runs WHERE :keep > 0 AND session_id = :profile AND id <= (SELECT id FROM persona_runs "
        "WHERE session_id = :profile ORDER BY id DESC LIMIT 1 OFFSET GREATEST(:keep - 1, 0)) AND (persona_runs.path "
        "= :path OR EXISTS (SELECT 1 FROM persona_runs AS newer WHERE newer.session_id = persona_runs.session_id "
        "AND newer.id > persona_runs.id AND newer.path = persona_runs.path)) RETURNING 1")
RUN = (f"INSERT INTO persona_runs ({INSERT_COLUMNS}) SELECT :run_at, :profile, :target, :path, :reason, :sha256, "
       ":tokens, :budget, :sections_kept, :sections_dropped, :generation, :memory_watermark, outcome, :config_hash, "
       ":counter FROM fate RETURNING 1")


@caches.memo("block_write.statement", owner="process", key="a deployment's channel SQL", bound=16)
def statement(channel_sql: str) -> str:
    """The one statement, for the deployment's channel SQL (``Backend.channel_sql``)."""
    return (f"WITH fate AS ({FATE}), put AS ({PUT}), trimmed AS ({TRIM}), run AS ({RUN}) "
            f"SELECT previous, outcome, (SELECT pg_notify({channel_sql}, :payload) FROM put), "
            "CASE WHEN previous IS NOT DISTINCT FROM :text THEN set_config('synchronous_commit', 'off', true) END, "
            "(SELECT COUNT(*) FROM run) FROM fate")


@dataclass(frozen=True, slots=True)
class Written:
    """The statement, sent: read it (:meth:`answer`) once its transaction committed."""

    asked: Cursor

    def answer(self) -> tuple[str | None, Outcome]:
        """The block's text it replaced (None for none) and the run's outcome."""
        row = self.asked.fetchone()
        return row[0], row[1]


def write_at_once(store: Database, conn: Connection, block: StoredBlock, run: RunRecord, *, keep: int) -> Written:
    """Write ``block`` unless ``run`` is stale or the bytes are the same, announce it, record ``run`` with the
    outcome and trim the profile's old runs to ``keep`` (0: all kept), in one statement inside the caller's
    transaction (a server's: see the module's docstring)."""
    params: dict[str, Any] = {
        "profile": block.profile, "target": block.target, "generation": block.generation, "sha256": block.sha256,
        "text": block.text, "tokens": block.tokens, "counter": block.counter, "rendered_at": block.rendered_at,
        "path": str(run.path), "keep": keep, "run_at": store.now(), "reason": run.reason,
        "budget": run.budget, "sections_kept": run.sections_kept, "sections_dropped": run.sections_dropped,
        "memory_watermark": run.memory_watermark, "config_hash": run.config_hash, "channel": CHANNEL,
        "payload": announcement(block.profile, block.target, block.generation),
    }
    return Written(conn.execute(statement(store.backend.channel_sql(":channel")), params))
