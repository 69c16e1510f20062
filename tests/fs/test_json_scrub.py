"""Taking a text out of a host's JSON or JSON Lines file: only its text fields change, in every spelling of the
text, and a line that cannot be read is named while every other line is still scrubbed."""

from __future__ import annotations

import json
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.fs import json_scrub
from pipeline.fs.json_probe import Probe
from pipeline.fs.json_scrub import scrub_file, sweep_temps
from pipeline.fs.text_find import MARKER, Finder, needle
from pipeline.text import normal_form

SECRET = "Drinks Quetzal tea, never coffee"


@dataclass(frozen=True)
class Roles:
    text: frozenset[str] = frozenset({"content", "text", "output", "arguments", "input"})
    structure: frozenset[str] = frozenset({"type", "role", "cwd", "gitBranch", "uuid", "name", "file_path"})
    messages: frozenset[str] = frozenset({"content", "text"})


def scrub(path: Path, *texts: str, **options: object) -> json_scrub.Scrubbed | None:
    found = [needle(b"key", normal_form(text)) for text in texts]
    return scrub_file(path, Probe(found), Finder(found, b"key"), Roles(), **options)  # type: ignore[arg-type]


def jsonl(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def record(content: object, **more: object) -> str:
    return json.dumps({"type": "user", "cwd": "/home/me/Go", "message": {"role": "user", "content": content},
                       **more}, separators=(",", ":"), ensure_ascii=False)


def test_only_text_fields_change_and_structure_and_keys_stay(tmp_path: Path) -> None:
    """Forgetting `user` and `Go` left Claude Code unable to read its transcripts: a short fact is replaced only
    where it is a message's whole text, and structure (type, role, cwd, keys) never changes."""
    lines = [record("user"), record("I use Go daily"), json.dumps({"user": "x", "type": "user", "gitBranch": "main"}),
             record("Go")]
    path = jsonl(tmp_path / "s.jsonl", *lines)
    done = scrub(path, "user", "Go", "main")
    assert done is not None and done.replaced == 2 and done.short  # "I use Go daily": named, not replaced
    after = path.read_text("utf-8").splitlines()
    assert [json.loads(line)["message"]["content"] for line in (after[0], after[1], after[3])] == [
        MARKER, "I use Go daily", MARKER]
    assert after[2] == lines[2] and all(json.loads(line).get("cwd") in (None, "/home/me/Go") for line in after)
    assert after[0] == lines[0].replace('"content":"user"', f'"content":"{MARKER}"')


@pytest.mark.parametrize("spelled", [
    SECRET.replace("e", "\\u0065"),  # an escape for an ordinary letter
    SECRET.replace("e", "\\u0045"),  # and for another case
    "\\u" + "\\u".join(f"{ord(c):04x}" for c in SECRET),  # every character escaped
    SECRET.upper(),
    SECRET.replace(" ", "\\n  "),  # spaced over lines
    "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET),  # full width
    SECRET.replace("Quetzal", "Quet\u200bzal"),  # a zero-width space inside a word
    SECRET.replace("Quetzal", "Quet\\u00adzal"),  # an escaped soft hyphen
])
def test_every_spelling_of_the_text_is_found_and_replaced(tmp_path: Path, spelled: str) -> None:
    path = jsonl(tmp_path / "s.jsonl", '{"type":"user","message":{"content":"said: ' + spelled + '. ok"}}')
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == 1, spelled
    assert json.loads(path.read_text("utf-8"))["message"]["content"] == f"said: {MARKER}. ok"


def test_nfd_and_surrogate_pairs_and_other_escapes_keep_their_spelling(tmp_path: Path) -> None:
    accented = "Café crème au matin, toujours"
    line = ('{"type":"user","content":"\\ud83c\\udf89 ' + unicodedata.normalize("NFD", accented)
            + ' \\u00e9 http:\\/\\/x \\ud83d"}')
    path = jsonl(tmp_path / "s.jsonl", line)
    done = scrub(path, accented)
    assert done is not None and done.replaced == 1
    assert path.read_text("utf-8") == '{"type":"user","content":"\\ud83c\\udf89 ' + MARKER + ' \\u00e9 http:\\/\\/x ' \
                                      '\\ud83d"}\n'


def test_json_inside_a_text_field_is_scrubbed_at_every_level_in_its_own_spelling(tmp_path: Path) -> None:
    """A Codex function_call_output holding a command's JSON output (`persona list --json`), itself holding JSON."""
    listed = json.dumps([{"id": 3, "content": SECRET, "note": json.dumps({"said": SECRET.lower()})}], indent=2)
    line = json.dumps({"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                                           "output": listed}}, separators=(",", ":"))
    path = jsonl(tmp_path / "rollout.jsonl", line)
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == 2
    output = json.loads(path.read_text("utf-8"))["payload"]["output"]
    assert output == listed.replace(SECRET, MARKER).replace(SECRET.lower(), MARKER)  # indentation kept
    assert json.loads(json.loads(output)[0]["note"]) == {"said": MARKER}


def test_a_lone_surrogate_a_deep_line_and_a_broken_line_are_named_and_the_rest_scrubbed(tmp_path: Path) -> None:
    deep = "[" * 100_000 + f'"{SECRET}"' + "]" * 100_000
    lone = '{"type":"user","message":{"content":"' + SECRET + ' \\ud83d"}}'  # a cut emoji: a lone surrogate
    path = jsonl(tmp_path / "s.jsonl", lone, deep, '{"content": "' + SECRET,
                 record("fine"), record(SECRET))
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == 2
    assert done.reason == "line 2 is nested more than 64 levels deep; line 3 is not JSON"
    after = path.read_text("utf-8").splitlines()
    assert json.loads(after[0])["message"]["content"] == f"{MARKER} \ud83d"
    assert after[1] == deep and after[4] == record(MARKER)


def test_a_line_not_utf8_and_an_overlong_line_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_scrub, "LINE_MAX", 150)
    monkeypatch.setattr(json_scrub, "BLOCK", 32)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"content": "\xe9 ' + SECRET.encode() + b'"}\n' + record("x" * 300 + SECRET).encode() + b"\n"
                     + record(SECRET).encode() + b"\n")
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == 1
    assert done.reason == "line 1 is not UTF-8; line 2 is longer than 0 MB, so it was not read"


def test_a_file_is_swapped_with_its_mode_kept_and_a_file_without_the_text_is_left(tmp_path: Path) -> None:
    tmp_path = tmp_path / "sessions"
    tmp_path.mkdir()
    held = jsonl(tmp_path / "held.jsonl", record(SECRET))
    held.chmod(0o640)
    clean = jsonl(tmp_path / "clean.jsonl", record("Answers tersely."))
    before = os.stat(clean)
    done = scrub(held, SECRET)
    assert done is not None and (done.replaced, done.reason) == (1, "")
    assert stat.S_IMODE(os.stat(held).st_mode) == 0o640 and "Quetzal" not in held.read_text("utf-8")
    assert scrub(clean, SECRET) is None and os.stat(clean).st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clean.jsonl", "held.jsonl"]  # no temp file


def test_lines_a_host_appends_while_the_file_is_read_are_scrubbed_too(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = jsonl(tmp_path / "s.jsonl", record(SECRET), record("middle"))
    copy = json_scrub._copy
    appended = []

    def copy_then_append(*args: object) -> int:
        done = copy(*args)  # type: ignore[arg-type]
        if not appended:  # the host's session writes its next lines as we copy
            appended.append(1)
            with path.open("a", encoding="utf-8") as handle:
                handle.write(record(f"again: {SECRET}") + "\n")
        return done
    monkeypatch.setattr(json_scrub, "_copy", copy_then_append)
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == 2 and done.reason == ""
    assert [json.loads(line)["message"]["content"] for line in path.read_text("utf-8").splitlines()] == [
        MARKER, "middle", f"again: {MARKER}"]


def test_a_dry_run_counts_and_changes_nothing(tmp_path: Path) -> None:
    held = tmp_path / "chat.json"
    held.write_text(json.dumps({"messages": [{"content": SECRET}, {"text": SECRET}]}, indent=2), encoding="utf-8")
    data = held.read_bytes()
    done = scrub(held, SECRET, dry_run=True)
    assert done is not None and done.replaced == 2 and held.read_bytes() == data


def test_a_json_document_is_scrubbed_whole_and_a_broken_one_named(tmp_path: Path) -> None:
    chat = tmp_path / "checkpoint-a.json"
    chat.write_text(json.dumps([{"role": "user", "parts": [{"text": SECRET}]}], indent=2), encoding="utf-8")
    broken = tmp_path / "checkpoint-b.json"
    broken.write_text('[{"text": "' + SECRET, encoding="utf-8")
    assert getattr(scrub(chat, SECRET), "replaced", 0) == 1
    assert json.loads(chat.read_text("utf-8")) == [{"role": "user", "parts": [{"text": MARKER}]}]
    assert getattr(scrub(broken, SECRET), "reason", "") == "it is not JSON"


def test_a_killed_scrubs_temporary_files_are_swept_and_no_one_elses(tmp_path: Path) -> None:
    ours = tmp_path / ".s.jsonl.persona-scrub-0123456789ab"
    theirs = tmp_path / ".s.jsonl.tmp-0123456789ab"
    ours.write_text("x")
    theirs.write_text("y")
    assert sweep_temps(tmp_path) == 1 and not ours.exists() and theirs.exists()


@pytest.mark.parametrize("block", [16, 64, 300])
def test_lines_cut_by_a_read_are_read_again_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  block: int) -> None:
    """Each read starts at a line's start: a line the read cuts (or longer than a read, within the bound) is read
    whole by the next, the last line counts without its newline, and an overlong one is named, not read."""
    monkeypatch.setattr(json_scrub, "BLOCK", block)
    monkeypatch.setattr(json_scrub, "LINE_MAX", 450)
    lines = [record(("x" * size) + (f" {SECRET}" if size % 3 == 0 else "")) for size in range(0, 330, 11)]
    overlong = record("y" * 600 + SECRET)
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([*lines[:5], overlong, *lines[5:]]), encoding="utf-8")  # no final newline
    done = scrub(path, SECRET)
    assert done is not None and done.replaced == sum(SECRET in line for line in lines)
    assert done.reason == "line 6 is longer than 0 MB, so it was not read"
    expected = [line.replace(SECRET, MARKER) for line in lines]
    assert path.read_text("utf-8") == "\n".join([*expected[:5], overlong, *expected[5:]])
