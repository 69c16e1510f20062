"""Drive the existing tier (mnemosyne-memory 3.15.1) through the operations we benchmark.

Runs in its own venv (`make bench-compare` makes it); imports nothing of ours.
Reads a JSON job on argv[1], prints JSON results: timings in microseconds and
the outputs, which the caller checks for correctness with the exact counter.
"""

import json
import os
import sqlite3
import statistics
import sys
import time


class Beam:
    """The one attribute the existing tier's persona code uses."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path)


def median_us(call, repeats):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def render(job):
    from mnemosyne.core.persona import write_persona_file

    out = {}
    for size, db in job["render_dbs"].items():
        conn = sqlite3.connect(db)
        path = job["workdir"] + f"/existing-{size}.md"

        def run(conn=conn, path=path):
            rows = conn.execute("SELECT content, topic, confidence, tier FROM memoria_persona").fetchall()
            candidates = [{"content": c, "topic": t, "importance": i, "tier": tier} for c, t, i, tier in rows]
            write_persona_file(candidates, persona_file=path, token_cap=job["cap"])

        seconds = median_us(run, 3) / 1e6
        with open(path, encoding="utf-8") as handle:
            out[size] = {"seconds": seconds, "text": handle.read()}
    return out


def inject(job):
    os.environ["MNEMOSYNE_PERSONA_ENABLED"] = "true"  # the existing tier reads these at import time
    os.environ["MNEMOSYNE_PERSONA_FILE"] = job["inject_file"]
    os.environ["MNEMOSYNE_PERSONA_TOKEN_CAP"] = str(job["cap"])
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    agent = HermesPersonaPromptMixin()

    def cold():
        agent._persona_cache = {"mtime": None, "content": None}
        agent._persona_block()

    cold_us = median_us(cold, 200)
    agent._persona_block()
    calls = 100_000
    start = time.perf_counter_ns()
    for _ in range(calls):
        agent._persona_block()
    warm_us = (time.perf_counter_ns() - start) / calls / 1000
    return {"cold_us": cold_us, "warm_us": warm_us, "block": agent._persona_block()}


def triggers(job):
    from mnemosyne.core.persona import PersonaTriggers

    checker = PersonaTriggers(Beam(job["trigger_db"]), persona_file=job["trigger_file"], interval=50,
                              daily_sync_hour=-1)
    return {"us": median_us(checker.should_generate, 200), "result": checker.should_generate()}


def promote(job):
    from hermes_memory_provider.persona_adapter import PersonaAdapter

    adapter = PersonaAdapter(beam_instance=Beam(job["promote_db"]))
    ids = iter(job["memory_ids"])

    def one():
        adapter.handle_tool_call("mnemosyne_persona_promote", {"memory_id": next(ids), "tier": "long_term"})

    one_us = median_us(one, 200)
    remaining = list(ids)[: job["bulk"]]
    start = time.perf_counter()
    for memory_id in remaining:
        adapter.handle_tool_call("mnemosyne_persona_promote", {"memory_id": memory_id, "tier": "long_term"})
    bulk_s = time.perf_counter() - start
    again = json.loads(adapter.handle_tool_call("mnemosyne_persona_promote",
                                                {"memory_id": job["memory_ids"][0], "tier": "long_term"}))
    rows = adapter._conn().execute("SELECT COUNT(*) FROM memoria_persona WHERE source_memory_id = ?",
                                   (job["memory_ids"][0],)).fetchone()[0]
    return {"one_us": one_us, "bulk_s": bulk_s, "bulk_n": len(remaining), "promote_twice_rows": rows,
            "promote_twice": again}


if __name__ == "__main__":
    job = json.loads(sys.argv[1])
    print(json.dumps({"render": render(job), "inject": inject(job), "triggers": triggers(job),
                      "promote": promote(job)}))
