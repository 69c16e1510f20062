"""Counting only what decides something: a text's UTF-8 length bounds its count, a render that fits by that bound
loads no tokenizer, and an exact count of a fact is kept in the store (and forgotten with the fact)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline import get_counter

from ..conftest import REPO

SAMPLES = [
    "", "a", "def f(x):\n    return x ** 2  # squares\n",
    "日本語のテキストを数える。", "🙂🙂👍🏽 👨‍👩‍👧‍👦", "مرحبا بالعالم",
    "\r\n" * 40, " " * 300, "x" * 5_000, "<|endoftext|><|fim_prefix|>", "- Answers tersely.\n## style\n\n",
    "\x00\x01\x7f", "e\u0301 (decomposed)",
]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_texts_utf8_length_bounds_its_count(encoding):
    counter = get_counter(encoding)
    for text in SAMPLES:
        assert counter.count(text) <= counter.bound(text) == len(text.encode("utf-8")), text


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_the_bound_holds_for_any_text(text):
    for encoding in ("o200k_base", "cl100k_base"):
        counter = get_counter(encoding)
        assert counter.count(text) <= counter.bound(text)


# Renders in a process of its own and says whether the tokenizer was imported, and which texts it counted.
PROBE = """
import json, sys
counted = []
if {watch}:
    import toktok
    for name in ("batch_count", "truncate"):
        real = getattr(toktok, name)
        def wrapped(texts, *args, _real=real, _name=name, **kwargs):
            counted.extend([texts] if _name == "truncate" else list(texts))
            return _real(texts, *args, **kwargs)
        setattr(toktok, name, wrapped)
from pipeline.cli import app
try:
    app({args!r})
except SystemExit as done:
    assert not done.code, done.code
print(json.dumps({{"toktok": "toktok" in sys.modules, "counted": counted}}))
"""


def render_in_process(tmp_path, profile: str, budget: int, *, watch: bool = False) -> dict:
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "home")}
    script = PROBE.format(watch=watch, args=[*file_settings(tmp_path, profile, budget), "render", "--profile",
                                             profile])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def add_facts(tmp_path, profile: str, count: int) -> list[str]:
    from pipeline import PersonaStore

    texts = [f"{profile} prefers habit number {index} when working on the project." for index in range(count)]
    with PersonaStore(tmp_path / "m.db", profile=profile) as store:
        for index, text in enumerate(texts):
            store.add(text, topic=f"topic {index % 5}")
    return texts


def file_settings(tmp_path, profile: str, budget: int) -> list[str]:
    return ["--db", str(tmp_path / "m.db"), "--set", f"injection.file={tmp_path / '{profile}.md'}",
            "--set", f"cap.token_cap={budget}"]


def kept_counts(tmp_path) -> list[tuple[int, str, str, int]]:
    with sqlite3.connect(tmp_path / "m.db") as conn:
        return conn.execute("SELECT persona_id, encoding, digest, tokens FROM persona_token_counts "
                            "ORDER BY persona_id").fetchall()


def test_a_render_far_under_its_budget_never_loads_the_tokenizer(tmp_path):
    for profile in ("alice", "bob"):
        add_facts(tmp_path, profile, 50)
    found = render_in_process(tmp_path, "alice", 20_000)
    assert found["toktok"] is False
    assert "alice prefers habit number 49" in (tmp_path / "alice.md").read_text()
    assert kept_counts(tmp_path) == []  # nothing counted, nothing kept


def test_a_fact_is_counted_once_and_its_count_kept_across_processes(tmp_path):
    texts = {profile: add_facts(tmp_path, profile, 40) for profile in ("alice", "bob")}
    # Over budget: the fit needs exact counts, so the tokenizer loads and each fact's count is kept.
    first = render_in_process(tmp_path, "alice", 150, watch=True)
    assert first["toktok"] is True and set(texts["alice"]) <= set(first["counted"])
    rows = kept_counts(tmp_path)
    counter = get_counter("o200k_base")
    digests = {hashlib.sha256(text.encode()).hexdigest(): text for text in texts["alice"]}
    assert len(rows) == 40 and all(encoding == "o200k_base" for _, encoding, _, _ in rows)
    assert all(tokens == counter.count(digests[digest]) for _, _, digest, tokens in rows)
    written = (tmp_path / "alice.md").read_text()
    assert 0.95 * 150 <= counter.count(written) <= 150  # facts were left out: the budget is used, never passed
    # A new process renders the same: no fact's text reaches the tokenizer again, and the file is the same.
    (tmp_path / "alice.md").unlink()
    second = render_in_process(tmp_path, "alice", 150, watch=True)
    assert not set(texts["alice"]) & set(second["counted"])
    assert (tmp_path / "alice.md").read_text() == written
    # The other profile's facts are counted for it alone.
    render_in_process(tmp_path, "bob", 150)
    assert len(kept_counts(tmp_path)) == 80


def test_forget_leaves_no_count_nor_digest_of_the_fact(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    texts = {profile: add_facts(tmp_path, profile, 30) for profile in ("alice", "bob")}
    for profile in ("alice", "bob"):
        render_in_process(tmp_path, profile, 120)
    gone = texts["alice"][3]
    gone_digest = hashlib.sha256(gone.encode()).hexdigest()
    with sqlite3.connect(tmp_path / "m.db") as conn:
        (gone_id,) = conn.execute("SELECT id FROM memoria_persona WHERE content = ?", (gone,)).fetchone()
    assert gone_id in {row[0] for row in kept_counts(tmp_path)}
    env = {"HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(app, [*file_settings(tmp_path, "alice", 120), "forget", str(gone_id), "--profile",
                                      "alice"], env=env)
    assert result.exit_code == 0, result.stderr
    rows = kept_counts(tmp_path)
    assert gone_id not in {row[0] for row in rows} and gone_digest not in {row[2] for row in rows}
    assert len(rows) == 59  # every other fact's count, both profiles', stays
    assert gone_digest.encode() not in (tmp_path / "m.db").read_bytes()  # the deleted row's bytes were scrubbed


def test_counts_are_kept_and_forgotten_on_either_backend(tmp_path, database):
    """The fit's counts on SQLite and PostgreSQL alike: kept for the rendered profile's facts alone, read back by
    the next render, and gone with a forgotten fact."""
    from pipeline import run_pipeline
    from pipeline.store.erasure import forget_fact

    from ..conftest import local_settings

    for profile in ("alice", "bob"):
        store = database.store(profile=profile)
        for index in range(30):
            store.add(f"{profile} prefers habit number {index} when working on the project.", topic=f"t{index % 3}")
    settings = local_settings(tmp_path, {"cap.token_cap": 120, "injection.file": str(tmp_path / "{profile}.md")},
                              database=database)
    alice = database.store(profile="alice")
    run_pipeline(settings, store=alice)
    ids = {fact.id for fact in alice.list()}
    kept = database.execute("SELECT persona_id, tokens FROM persona_token_counts")
    assert {row[0] for row in kept} == ids  # alice's facts, none of bob's
    counter = get_counter("o200k_base")
    texts = {fact.id: fact.content for fact in alice.list()}
    assert all(tokens == counter.count(texts[persona_id]) for persona_id, tokens in kept)
    first = (tmp_path / "alice.md").read_text()
    (tmp_path / "alice.md").unlink()
    run_pipeline(settings, store=database.store(profile="alice"))
    assert (tmp_path / "alice.md").read_text() == first
    gone = min(ids)
    forget_fact(alice, gone)
    assert gone not in {row[0] for row in database.execute("SELECT persona_id FROM persona_token_counts")}
    assert len(database.execute("SELECT persona_id FROM persona_token_counts")) == 29


def segment_samples() -> list[str]:
    golden = sorted(path for path in (REPO / "tests" / "golden").iterdir() if path.is_file())
    joined = ["".join(SAMPLES), "a\n/b\n c\n\n## d\n- e!\n\n-f\r\n\r\nG\n\t h\n'''s\n😀\n1\n22"]
    return [*SAMPLES, *joined, *(path.read_text(encoding="utf-8") for path in golden)]


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_texts_count_is_the_sum_of_its_segments_counts(encoding):
    from pipeline.render.tokens import segments

    counter = get_counter(encoding)
    for text in segment_samples():
        parts = segments(text)
        assert "".join(parts) == text and sum(counter.count(part) for part in parts) == counter.count(text), text


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(["\n", "\r\n", "\n\n", " ", "/", "-", "#", "a", "B", "é", "中", "7", "'s", "!",
                                         "\t", "🙂", ".", "- x\n", "## T\n", "http://a/b\n/c"]), max_size=60))
def test_segments_add_up_for_any_text_of_lines(pieces):
    from pipeline.render.tokens import segments

    text = "".join(pieces)

    for encoding in ("o200k_base", "cl100k_base"):
        counter = get_counter(encoding)
        assert sum(counter.count(part) for part in segments(text)) == counter.count(text)


def segment_rows(tmp_path) -> int:
    with sqlite3.connect(tmp_path / "m.db") as conn:
        return int(conn.execute("SELECT count(*) FROM persona_segment_counts").fetchone()[0])


def test_a_write_after_a_render_that_fit_counts_nothing_and_writes_the_same_file(tmp_path):
    """A render whose UTF-8 bound passes its budget but whose count fits keeps its segments' counts; the next
    process (`persona add`, which renders every target) bounds its render by them and the new fact's bytes, so it
    loads no tokenizer, and writes what a render that counts writes. Bob's lines are his own: his first render
    counts. A forget drops every segment's count."""
    from typer.testing import CliRunner

    from pipeline import PersonaStore
    from pipeline.cli import app
    from pipeline.render.tokens import segments
    from pipeline.store import segment_counts

    for profile in ("alice", "bob"):
        add_facts(tmp_path, profile, 30)
    assert render_in_process(tmp_path, "alice", 1_000)["toktok"] is True  # 30 lines of ~60 bytes: counted
    kept = segment_rows(tmp_path)
    assert kept > 0
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "HOME": str(tmp_path / "home")}
    script = PROBE.format(watch=False, args=[*file_settings(tmp_path, "alice", 1_000), "add", "Walks to work daily.",
                                             "--topic", "topic 1", "--profile", "alice"])
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["toktok"] is False
    written = (tmp_path / "alice.md").read_text()
    assert "Walks to work daily." in written and segment_rows(tmp_path) == kept  # nothing counted, nothing kept
    with sqlite3.connect(tmp_path / "m.db") as conn:
        conn.execute("DELETE FROM persona_segment_counts")  # a render that counts everything again
    (tmp_path / "alice.md").unlink()
    assert render_in_process(tmp_path, "alice", 1_000)["toktok"] is True
    assert (tmp_path / "alice.md").read_text() == written
    assert render_in_process(tmp_path, "bob", 1_000)["toktok"] is True
    with sqlite3.connect(tmp_path / "m.db") as conn:
        (fact_id, gone) = conn.execute("SELECT id, content FROM memoria_persona WHERE session_id = 'bob' "
                                       "ORDER BY id LIMIT 1").fetchone()
    with_it = [part for part in segments((tmp_path / "bob.md").read_text()) if gone in part]
    with PersonaStore(tmp_path / "m.db", profile="bob") as store:
        assert len(with_it) == 1 and segment_counts.known(store, "o200k_base", with_it)
    result = CliRunner().invoke(app, [*file_settings(tmp_path, "bob", 1_000), "forget", str(fact_id), "--profile",
                                      "bob"], env={"HOME": str(tmp_path / "home")})
    assert result.exit_code == 0, result.stderr
    with PersonaStore(tmp_path / "m.db", profile="bob") as store:
        assert segment_counts.known(store, "o200k_base", with_it) == {}  # the files rendered again keep theirs
