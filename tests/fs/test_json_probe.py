"""The quick look over a history file's raw bytes (:class:`pipeline.fs.json_probe.Probe`) never clears a line the
full reading would change: each spelling of a text (case, JSON escapes for any character, surrogate pairs, NFD,
full width, invisible characters, nesting) sends its line to be parsed, wherever it stands in a block, and a
property test compares the probe with the full reading (every line parsed, every string a text) on generated
transcripts."""

from __future__ import annotations

import json
import random
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.fs.json_probe import CHUNK, Probe
from pipeline.fs.json_text import edits, parse
from pipeline.fs.text_find import Finder, fold, needle
from pipeline.text import DASHES, FINAL_MARKS, normal_form

FACTS = ["Drinks Quetzal tea, never coffee", "Schreibt Commit-Nachrichten auf Englisch",
         "Prefers café crème au lait", "Feiert jeden Freitag mit 🎉 und Kuchen", "用中文回答技术问题", "uses Go"]
NOISE = ["ß", "é", "’", "—", "ⁿ", "🎉", "中", "\u200b", "ﬁ", "Ｋ", "e\u0301"]  # characters a transcript holds anyway
SECRET = FACTS[0]


def probe_and_finder(*facts: str) -> tuple[Probe, Finder]:
    found = [needle(b"key", normal_form(fact)) for fact in facts]
    return Probe(found), Finder(found, b"key")


def changed(line: str, finder: Finder) -> bool:
    """Whether the full reading changes (or names) ``line``: parsed whole, every string of it a text."""
    found = edits(line, parse(line), None, finder)
    return bool(found.spans) or found.short_left


def marked(block: bytes, probe: Probe) -> list[bytes]:
    return [block[start:end] for start, end in probe.lines(block)]


def escaped(text: str, rng: random.Random, share: float) -> str:
    """A JSON string token of ``text`` with some of its characters spelled as escapes (either case of hex digits,
    a surrogate pair beyond the first plane) and solidi escaped."""
    out = []
    for char in text:
        if rng.random() >= share and char not in '"\\\n\t' and char >= " ":
            out.append("\\/" if char == "/" and rng.random() < 0.5 else char)
            continue
        units = char.encode("utf-16-be")
        codes = [int.from_bytes(units[at:at + 2], "big") for at in range(0, len(units), 2)]
        out.append("".join(f"\\u{code:04{rng.choice('xX')}}" for code in codes))
    return '"' + "".join(out) + '"'


def spelled(text: str, rng: random.Random) -> str:
    """The text in a spelling its normal form does not tell apart from it."""
    out = rng.choice([text, text.upper(), text.lower(), text.title(), unicodedata.normalize("NFD", text),
                      "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)])
    if rng.random() < 0.3:
        out = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and rng.random() < 0.3 else c for c in out)
    if rng.random() < 0.3:
        at = rng.randrange(len(out) + 1)
        out = out[:at] + rng.choice(["\u200b", "\u00ad", "\u2060"]) + out[at:]
    return out.replace(" ", rng.choice([" ", "  ", "\n", " \t "]), 1)


def record(value: str, rng: random.Random, nest: int) -> str:
    """One transcript line whose text field holds ``value``, JSON inside it ``nest`` times, escaped at random."""
    for _ in range(nest):
        value = json.dumps({"note": value, "id": rng.randrange(99)}, ensure_ascii=rng.random() < 0.5)
    return '{"type":"user","message":{"role":"user","content":' + escaped(value, rng, rng.choice([0, 0.1, 1])) + "}}"


def filler(rng: random.Random) -> str:
    """A line holding none of the texts: words, the usual characters outside ASCII, sometimes long."""
    words = rng.choices(["the", "build", "ran", "green", "tea", "never", "commit", "auf", "go", *NOISE],
                        k=rng.randrange(1, 40))
    line = record(" ".join(words), rng, rng.randrange(2))
    return line[:-3] + " " + "x" * rng.choice([0, 0, 1000, CHUNK - 7, CHUNK * 2 + 3]) + line[-3:]


@pytest.mark.parametrize("spelling", [
    SECRET.lower(), SECRET.upper(), SECRET.title(), "dRiNkS qUeTzAl TeA, NeVeR cOfFeE",  # ASCII case
    SECRET.replace("e", "\\u0065"), SECRET.replace("Q", "\\u0051").replace("z", "\\u007A"),  # escapes, hex case
    "\\u" + "\\u".join(f"{ord(c):04x}" for c in SECRET),  # every character escaped
    "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET),  # full width (outside ASCII)
    SECRET.replace("Quetzal", "\\ud835\\udc10uetzal"),  # a surrogate pair: mathematical bold Q
    SECRET.replace("Quetzal", "Quet\u200bzal"), SECRET.replace("Quetzal", "Quet\\u00adzal"),  # invisible ones
])
def test_every_spelling_sends_its_line_to_be_parsed(spelling: str) -> None:
    probe, finder = probe_and_finder(SECRET)
    line = '{"type":"user","message":{"content":"said: ' + spelling + '"}}'
    assert changed(line, finder)
    block = (record("nothing here", random.Random(1), 0) + "\n" + line + "\n").encode()
    assert marked(block, probe) == [line.encode()]


@pytest.mark.parametrize("fact", ["Prefers café crème au lait", "Feiert jeden Freitag mit 🎉 und Kuchen",
                                  "用中文回答技术问题"])
@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_text_outside_ascii_is_found_in_each_normal_form_and_escaped(fact: str, form: str) -> None:
    probe, finder = probe_and_finder(fact)
    text = unicodedata.normalize(form, fact)
    for line in ('{"content":"' + text + '"}', '{"content":' + json.dumps(text) + "}"):
        assert changed(line, finder)
        assert marked(line.encode() + b"\n", probe) == [line.encode()]


@pytest.mark.parametrize("offset", [-3, -2, -1, 0, 1])
def test_a_character_cut_by_a_piece_boundary_or_far_from_the_block_start_is_seen(offset: int) -> None:
    """Characters outside ASCII are looked for only in the pieces of a block that hold some: a text spelled in
    full width, its first character across the boundary of two pieces, deep in a block of pure ASCII."""
    probe, finder = probe_and_finder(SECRET)
    wide = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in SECRET)
    head = '{"content":"'
    before = record("plain ascii " * 9000, random.Random(2), 0) + "\n"
    pad = "y" * (3 * CHUNK + offset - len(before) - len(head) - 1)
    line = head + pad + " " + wide + '"}'
    assert (before + line).encode().index(wide[0].encode()) == 3 * CHUNK + offset
    assert changed(line, finder)
    assert marked((before + line + "\n").encode(), probe) == [line.encode()]


def test_a_text_two_levels_deep_with_escaped_escapes_is_seen() -> None:
    probe, finder = probe_and_finder(SECRET)
    inner = '{"said": "' + SECRET.replace("e", "\\u0065") + '"}'  # an escape inside the inner JSON text...
    line = json.dumps({"type": "response_item", "payload": {"output": json.dumps({"stdout": inner})}})
    assert "\\\\\\\\u0065" in line  # ...escaped again at each level above it
    assert changed(line, finder)
    assert marked(line.encode(), probe) == [line.encode()]


@pytest.mark.parametrize("mate", [
    "M\\\\u0061te",  # an escape one level down: its backslash escaped
    "M\\u005cu0061te",  # ...or spelled as an escape itself
    "M\\\\\\u0075ff41te",  # its "u" escaped (a full-width a; the text has no "u" of its own)
    "M\\\\u\\u0066f41te",  # one of its hex digits escaped (nor an "f")
    "M\\\\ud835\\\\udc1ate",  # a surrogate pair one level down (a mathematical a)
])
def test_an_escape_spelled_by_escapes_of_the_level_above_is_seen(mate: str) -> None:
    fact = "Drinks Mate, never milk"
    probe, finder = probe_and_finder(fact)
    line = '{"type":"function_call_output","output":"{\\"said\\": \\"Drinks ' + mate + ', never milk\\"}"}'
    assert changed(line, finder)
    assert marked(line.encode(), probe) == [line.encode()]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.lists(st.sampled_from(FACTS), min_size=1, max_size=3, unique=True))
def test_the_probe_never_clears_a_line_the_full_reading_changes(seed: int, facts: list[str]) -> None:
    rng = random.Random(seed)
    probe, finder = probe_and_finder(*facts)
    lines = []
    for _ in range(rng.randrange(5, 30)):
        if rng.random() < 0.3:
            fact = rng.choice(FACTS)  # sometimes a text that is not forgotten: its line must not count
            said = " ".join(rng.choices(["we", "moved", "cache", *NOISE], k=3)) + " " + spelled(fact, rng)
            lines.append(record(said + rng.choice(["", ".", " ok"]), rng, rng.choice([0, 0, 1, 2])))
        else:
            lines.append(filler(rng))
    block = "".join(line + "\n" for line in lines).encode()
    found = set(marked(block, probe))
    missed = [line for line in lines if changed(line, finder) and line.encode() not in found]
    assert not missed, [re.sub(r"x{100,}", "x...", line)[:300] for line in missed]
    assert found <= {line.encode() for line in lines}  # whole lines, as they stand in the block


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "É", "e\u0301", "ß", "Ｋ", " ", "-", "\u200b", "\u00ad", "ﬁ", "🎉", "中",
                                 *map(chr, DASHES)]), max_size=40).map("".join))
def test_a_fields_fold_is_the_normal_forms_mapping(text: str) -> None:
    """The fields' fold (its dashes replaced by a regular expression, not a table) maps as the normal form does."""
    assert " ".join(fold(text).split()).rstrip(FINAL_MARKS) == normal_form(text)
