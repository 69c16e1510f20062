"""Taking a text out of a host's JSON or JSON Lines file: only inside string values, every other byte kept."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fs.json_scrub import MARKER, Needles, holds, scrub_file, scrub_text
from pipeline.schedule.host_histories import forms

SECRET = 'Drinks "Quetzal" tea & <honey> é'
NEEDLES = Needles(forms([SECRET]))


def line(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_the_text_leaves_every_string_value_and_every_other_byte_stays() -> None:
    kept = line({"type": "assistant", "text": "Noted, nothing else.", "n": 3, "ok": True})
    held = line({"type": "user", "message": {"content": [{"text": f"remember {SECRET} please"}]}})
    text = f"{kept}\n{held}\n"
    scrubbed, count = scrub_text(text, NEEDLES, lines=True)
    assert count == 1
    assert scrubbed == f"{kept}\n{held.replace(json.dumps(SECRET, ensure_ascii=False)[1:-1], MARKER)}\n"
    assert json.loads(scrubbed.splitlines()[1])["message"]["content"][0]["text"] == f"remember {MARKER} please"


def test_json_inside_a_json_string_loses_the_text_too() -> None:
    """A tool call's arguments: a JSON text inside a JSON string, so the text stands escaped twice."""
    call = line({"type": "function_call", "arguments": json.dumps({"note": SECRET})})
    scrubbed, count = scrub_text(call, NEEDLES, lines=True)
    assert count == 1 and SECRET not in json.loads(json.loads(scrubbed)["arguments"])["note"]
    assert json.loads(json.loads(scrubbed)["arguments"]) == {"note": MARKER}


def test_both_ascii_styles_and_an_odd_escape_lose_the_text() -> None:
    ascii_line = json.dumps({"text": SECRET})  # \u00e9
    odd = '{"text": "' + json.dumps(SECRET)[1:-1].replace("Q", "\\u0051") + ' and more", "other": "caf\\u00e9"}'
    for text in (ascii_line, odd):
        scrubbed, count = scrub_text(text, NEEDLES, lines=False)
        assert count == 1 and SECRET not in json.dumps(json.loads(scrubbed), ensure_ascii=False)
    # the odd string is written again whole; the other string keeps its own escapes
    assert scrub_text(odd, NEEDLES, lines=False)[0].endswith('"other": "caf\\u00e9"}')


def test_a_short_text_leaves_longer_words_and_escapes_alone() -> None:
    short = Needles(forms(["Go", "nothing"]))
    text = line({"a": "Google and Go.", "b": "line\nnothing", "c": "Gopher"})
    scrubbed, count = scrub_text(text, short, lines=False)
    assert json.loads(scrubbed) == {"a": f"Google and {MARKER}.", "b": f"line\n{MARKER}", "c": "Gopher"}
    assert count == 2


def test_keys_numbers_and_a_text_outside_strings_are_never_touched() -> None:
    needles = Needles(forms(["true"]))
    text = '{"true": true, "n": [1, 2]}'
    assert scrub_text(text, needles, lines=False) == ('{"' + MARKER + '": true, "n": [1, 2]}', 1)


def test_a_file_is_swapped_with_its_mode_kept_and_a_file_without_the_text_is_left(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    held = folder / "rollout-1.jsonl"
    held.write_text(line({"text": SECRET}) + "\n", encoding="utf-8")
    held.chmod(0o644)
    clean = folder / "rollout-2.jsonl"
    clean.write_text(line({"text": "Answers tersely."}) + "\n", encoding="utf-8")
    before = os.stat(clean)
    done = scrub_file(held, NEEDLES, max_bytes=10_000)
    assert done is not None and (done.replaced, done.reason) == (1, "")
    assert stat.S_IMODE(os.stat(held).st_mode) == 0o644 and SECRET not in held.read_text(encoding="utf-8")
    assert scrub_file(clean, NEEDLES, max_bytes=10_000) is None
    assert os.stat(clean).st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in folder.iterdir()) == ["rollout-1.jsonl", "rollout-2.jsonl"]  # no temp file


def test_a_dry_run_counts_and_changes_nothing(tmp_path: Path) -> None:
    held = tmp_path / "chat.json"
    held.write_text(json.dumps({"messages": [SECRET, SECRET]}, indent=2), encoding="utf-8")
    data = held.read_bytes()
    done = scrub_file(held, NEEDLES, max_bytes=10_000, dry_run=True)
    assert done is not None and done.replaced == 2 and held.read_bytes() == data


def test_a_file_it_cannot_change_safely_is_named_with_the_reason_and_left(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(line({"text": "fine"}) + "\n" + '{"text": "' + SECRET.replace('"', '\\"') + '", \n',
                      encoding="utf-8")
    linked = tmp_path / "linked.jsonl"
    linked.symlink_to(broken)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"text": SECRET, "pad": "x" * 200}), encoding="utf-8")
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9", "text": "Drinks \\"Quetzal\\" tea & <honey> \\u00e9"}')
    data = {path: path.read_bytes() for path in (broken, big, latin)}
    reasons = {path.name: getattr(scrub_file(path, NEEDLES, max_bytes=100), "reason", None)
               for path in (broken, linked, big, latin)}
    assert reasons == {"broken.jsonl": "line 2 is not JSON, so the text cannot be found in its strings safely",
                       "linked.jsonl": "a symbolic link: persona-tier rewrites only plain files",
                       "big.json": "larger than 100 bytes (injection.max_file_bytes)",
                       "latin.json": "it is not UTF-8"}
    assert all(path.read_bytes() == before for path, before in data.items())


def test_a_database_is_searched_across_its_chunks(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    db.write_bytes(b"\0" * 1000 + SECRET.encode() + b"\0" * 1000)
    assert holds(db, NEEDLES, chunk=1010) and holds(db, NEEDLES, chunk=64)
    assert not holds(db, Needles(forms(["Bob plays the cello."])), chunk=64)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=12), st.booleans()), max_size=6), st.booleans())
def test_every_string_keeps_its_value_but_for_the_text(parts: list[tuple[str, bool]], ascii_only: bool) -> None:
    """Whatever surrounds the text, and however the line is escaped: the value decodes to the text replaced,
    and a line that never held it is byte for byte the same."""
    value = "".join(piece + (f" {SECRET} " if secret else "") for piece, secret in parts)
    plain = "".join(piece for piece, _ in parts)
    text = json.dumps({"held": value}, ensure_ascii=ascii_only) + "\n" + json.dumps({"kept": plain}) + "\n"
    scrubbed, _ = scrub_text(text, NEEDLES, lines=True)
    held, kept, _ = scrubbed.split("\n")
    assert SECRET not in json.loads(held)["held"]
    assert json.loads(held)["held"] == NEEDLES.decoded.sub(MARKER, value)  # type: ignore[union-attr]
    assert kept == json.dumps({"kept": plain}) or SECRET in plain
