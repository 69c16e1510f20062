"""The existing tier (mnemosyne-memory 3.15.1), driven sample by sample for the side-by-side benchmark.

Runs in its own venv (`make bench-compare` makes it) and imports nothing of
ours. It reads one JSON request per line on stdin and answers one JSON line
per request, so the caller can interleave its samples with ours: both feel
the same machine at the same moments.
"""

import json
import os
import sqlite3
import sys
import time


class Beam:
    """The one attribute the existing tier's persona code uses."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path)


STATE = {}


def setup(job):
    os.environ["MNEMOSYNE_PERSONA_ENABLED"] = "true"  # the existing tier reads these at import time
    os.environ["MNEMOSYNE_PERSONA_FILE"] = job["inject_file"]
    os.environ["MNEMOSYNE_PERSONA_TOKEN_CAP"] = str(job["cap"])
    from hermes_memory_provider.persona_adapter import PersonaAdapter
    from mnemosyne.core.persona import PersonaTriggers, write_persona_file
    from mnemosyne.integrations.hermes_persona_prompt import HermesPersonaPromptMixin

    STATE.update(job=job, write=write_persona_file, agent=HermesPersonaPromptMixin(),
                 promoter=PersonaAdapter(beam_instance=Beam(job["promote_db"])), ids=iter(job["memory_ids"]),
                 triggers={int(size): PersonaTriggers(Beam(db), persona_file=job["trigger_file"], interval=50,
                                                 daily_sync_hour=-1) for size, db in job["trigger_dbs"].items()})
    return {}


def render(size):
    job = STATE["job"]
    conn = sqlite3.connect(job["render_dbs"][str(size)])
    path = f"{job['workdir']}/existing-{size}.md"
    start = time.perf_counter_ns()
    rows = conn.execute("SELECT content, topic, confidence, tier FROM memoria_persona").fetchall()
    candidates = [{"content": c, "topic": t, "importance": i, "tier": tier} for c, t, i, tier in rows]
    STATE["write"](candidates, persona_file=path, token_cap=job["cap"])
    elapsed = time.perf_counter_ns() - start
    with open(path, encoding="utf-8") as handle:
        return {"ns": elapsed, "text": handle.read()}


def inject_cold(path):
    os.environ["MNEMOSYNE_PERSONA_FILE"] = path
    agent = STATE["agent"]
    agent.PERSONA_FILE = path
    agent._persona_cache = {"mtime": None, "content": None}
    start = time.perf_counter_ns()
    block = agent._persona_block()
    return {"ns": time.perf_counter_ns() - start, "block": block}


def inject_warm(calls):
    agent = STATE["agent"]
    agent._persona_block()
    start = time.perf_counter_ns()
    for _ in range(calls):
        agent._persona_block()
    return {"ns": (time.perf_counter_ns() - start) / calls}


def trigger(size):
    checker = STATE["triggers"][size]
    start = time.perf_counter_ns()
    result = checker.should_generate()
    return {"ns": time.perf_counter_ns() - start, "result": result}


def promote_one():
    start = time.perf_counter_ns()
    STATE["promoter"].handle_tool_call("mnemosyne_persona_promote", {"memory_id": next(STATE["ids"]),
                                                                     "tier": "long_term"})
    return {"ns": time.perf_counter_ns() - start}


def promote_bulk(count):
    ids = [next(STATE["ids"]) for _ in range(count)]
    start = time.perf_counter_ns()
    for memory_id in ids:
        STATE["promoter"].handle_tool_call("mnemosyne_persona_promote", {"memory_id": memory_id, "tier": "long_term"})
    elapsed = time.perf_counter_ns() - start
    again = ids[0]
    STATE["promoter"].handle_tool_call("mnemosyne_persona_promote", {"memory_id": again, "tier": "long_term"})
    rows = STATE["promoter"]._conn().execute("SELECT COUNT(*) FROM memoria_persona WHERE source_memory_id = ?",
                                             (again,)).fetchone()[0]
    return {"ns": elapsed, "count": count, "promote_twice_rows": rows}


OPERATIONS = {"setup": setup, "render": render, "inject_cold": inject_cold, "inject_warm": inject_warm,
              "trigger": trigger, "promote_one": promote_one, "promote_bulk": promote_bulk}

if __name__ == "__main__":
    for line in sys.stdin:
        request = json.loads(line)
        answer = OPERATIONS[request["op"]](*request.get("args", []))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
