"""`output: region`: our marked region of a file the user owns (CLAUDE.md, AGENTS.md, ...), and not one byte more.

Every test keeps a second profile (bob) in the same store and checks his text never reaches the first's file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline import PersonaStore, RegionId, StageError, remove_region, write_region
from pipeline.cli import app
from pipeline.fs.regions import find_regions

runner = CliRunner()
BEGIN = b"<!-- persona-tier:begin profile=default -->"
END = b"<!-- persona-tier:end profile=default -->"

USER_FILES = {
    "lf": b"# My rules\n\nUse tabs.\n",
    "crlf and bom": b"\xef\xbb\xbf# My rules\r\n\r\nUse tabs.\r\n",
    "no trailing newline": b"# My rules\n\nUse tabs.",
    "not utf-8 outside": b"# R\xe9gles (latin-1)\n\xff\xfe stray bytes\n",
    "empty": b"",
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A store with one rule for the default profile and a secret one for bob, and a config whose `claude` target
    writes a region of {profile}/CLAUDE.md."""
    with PersonaStore(tmp_path / "m.db") as store:
        store.add("Answers tersely.", topic="style")
    with PersonaStore(tmp_path / "m.db", profile="bob") as store:
        store.add("Bob's secret rule.", topic="bob")
    config(tmp_path)
    return tmp_path


def config(tmp_path: Path, **claude: object) -> Path:
    target = {"output": "region", "path": str(tmp_path / "{profile}" / "CLAUDE.md")} | claude
    data = {"store": {"path": str(tmp_path / "m.db")}, "injection": {"enabled": True, "target": "claude"},
            "targets": {"markdown": None, "claude": target}}
    path = tmp_path / "persona.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def persona(home: Path, *args: str) -> object:
    return runner.invoke(app, ["-c", str(home / "persona.yaml"), *args])


def claude_md(home: Path, profile: str = "default") -> Path:
    return home / profile / "CLAUDE.md"


def user_file(home: Path, data: bytes, profile: str = "default", mode: int = 0o644) -> Path:
    path = claude_md(home, profile)
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)
    return path


def render(home: Path, *args: str) -> None:
    result = persona(home, "render", *args)
    assert result.exit_code == 0, result.stderr


def add(home: Path, text: str, profile: str = "default") -> None:
    with PersonaStore(home / "m.db", profile=profile) as store:
        store.add(text, topic="more")


# -- only the region changes ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(USER_FILES))
def test_the_region_is_added_once_and_every_user_byte_stays(home, kind):
    original = USER_FILES[kind]
    path = user_file(home, original)
    render(home)
    first = path.read_bytes()
    assert first.startswith(original) and first.count(BEGIN) == 1 and first.count(END) == 1
    assert b"Answers tersely." in first and b"Bob" not in first
    assert first.endswith(b"\n") == (original.endswith(b"\n") or not original)  # a missing newline stays missing
    eol = b"\r\n" if b"\r\n" in original else b"\n"
    assert b"Answers tersely." + eol in first  # the region speaks the file's line endings
    assert path.stat().st_mode & 0o777 == 0o644
    render(home)  # a second render finds the region and adds no other
    assert path.read_bytes() == first


@pytest.mark.parametrize("kind", sorted(set(USER_FILES) - {"empty"}))
def test_edits_around_the_region_survive_every_render_and_removal_gives_back_the_users_file(home, kind):
    original = USER_FILES[kind]
    path = user_file(home, original)
    render(home)
    eol = b"\r\n" if b"\r\n" in original else b"\n"
    edited = b"Edited on top." + eol + path.read_bytes() + eol + b"Written below, by hand." + eol
    path.write_bytes(edited)
    add(home, "Prefers small commits.")
    add(home, "Bob again.", profile="bob")
    render(home)
    after = path.read_bytes()
    head, tail = edited.split(BEGIN)[0], edited.split(END)[1]
    assert after.startswith(head) and after.endswith(tail)
    assert b"Prefers small commits." in after and b"Bob" not in after
    assert remove_region(path, RegionId("default"))
    left = path.read_bytes()  # the region is gone; every line of the user's is there, in order
    assert BEGIN not in left and b"Answers" not in left
    assert left.startswith(b"Edited on top." + eol + original) and left.endswith(b"Written below, by hand." + eol)


@pytest.mark.parametrize("kind", sorted(USER_FILES))
def test_removing_the_region_restores_the_file_exactly(home, kind):
    path = user_file(home, USER_FILES[kind])
    render(home)
    assert remove_region(path, RegionId("default"))
    assert path.read_bytes() == USER_FILES[kind]


@pytest.mark.parametrize("kind", sorted(set(USER_FILES) - {"empty", "no trailing newline"}))
@pytest.mark.parametrize("blank", [False, True], ids=["right after", "after a blank line"])
def test_text_written_after_the_region_gets_back_exactly_what_the_user_wrote(home, kind, blank):
    """No blank line of ours is left behind between the user's text and what they wrote after the region."""
    original = USER_FILES[kind]
    eol = b"\r\n" if b"\r\n" in original else b"\n"
    path = user_file(home, original)
    render(home)
    below = (eol if blank else b"") + b"Written below, by hand." + eol
    path.write_bytes(path.read_bytes() + below)
    assert remove_region(path, RegionId("default"))
    assert path.read_bytes() == original + below


@pytest.mark.parametrize("blank", [False, True], ids=["right before", "after a blank line"])
def test_text_written_before_a_region_at_the_start_gets_back_exactly_what_the_user_wrote(home, blank):
    original = USER_FILES["lf"]
    config(home, region_at="start")
    path = user_file(home, original)
    render(home)
    above = b"Written above, by hand.\n" + (b"\n" if blank else b"")
    path.write_bytes(above + path.read_bytes())
    assert remove_region(path, RegionId("default"))
    assert path.read_bytes() == above + original


def test_markers_the_user_placed_are_filled_in_place(home):
    mine = b"# Top\n\n" + BEGIN + b"\nold text\n" + END + b"\n\n## Below, mine\n- keep me\n"
    path = user_file(home, mine)
    render(home)
    data = path.read_bytes()
    assert data.startswith(b"# Top\n\n" + BEGIN + b"\n") and data.endswith(END + b"\n\n## Below, mine\n- keep me\n")
    assert b"old text" not in data and b"Answers tersely." in data and b"Bob" not in data


def test_region_at_start_goes_after_the_bom_and_the_users_title(home):
    """#49: the file still opens with the user's `# Title` (and the blank line under it), then our region."""
    config(home, region_at="start")
    path = user_file(home, USER_FILES["crlf and bom"])
    render(home)
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf# My rules\r\n\r\n" + BEGIN + b"\r\n")
    assert data.endswith(END + b"\r\n\r\nUse tabs.\r\n") and b"Bob" not in data
    assert remove_region(path, RegionId("default")) and path.read_bytes() == USER_FILES["crlf and bom"]


@pytest.mark.parametrize("mine", [b"# Title\nUse tabs.\n", b"# Title\n", b"# Title", b"## Not a title\n\nx\n",
                                  b"#Not a heading\n"],
                         ids=["no blank", "title alone", "no line end", "h2", "no space"])
def test_a_region_at_the_start_follows_only_a_first_line_title_and_removes_to_the_users_bytes(home, mine):
    config(home, region_at="start")
    path = user_file(home, mine)
    render(home)
    data = path.read_bytes()
    title = mine.startswith(b"# ") and b"\n" in mine
    assert data.startswith(mine.split(b"\n")[0] + b"\n" + BEGIN if title else BEGIN)
    assert remove_region(path, RegionId("default")) and path.read_bytes() == mine


def test_an_unchanged_region_is_not_written_so_the_mtime_stays(home):
    path = user_file(home, USER_FILES["lf"])
    render(home)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()
    result = persona(home, "render")
    assert result.exit_code == 0 and "(unchanged)" in result.stdout
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino


def test_a_symlinked_claude_md_is_written_through_and_stays_a_link(home):
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_bytes(USER_FILES["lf"])
    claude_md(home).parent.mkdir()
    claude_md(home).symlink_to(dotfiles / "CLAUDE.md")
    render(home)
    assert claude_md(home).is_symlink()
    data = (dotfiles / "CLAUDE.md").read_bytes()
    assert data.startswith(USER_FILES["lf"]) and b"Answers tersely." in data
    shown = persona(home, "inject")
    assert shown.exit_code == 0 and "Answers tersely." in shown.stdout and "Use tabs" not in shown.stdout
    assert not list(claude_md(home).parent.glob("*.tmp-*"))


# -- broken markers: one error naming the file and line, nothing written ------------------------------

BEGIN_BOB = b"<!-- persona-tier:begin profile=bob -->"
BROKEN = {
    "begin without end": (b"a\n" + BEGIN + b"\nx\n", 2, "never ends"),
    "end without begin": (b"a\nb\n" + END + b"\n", 3, "never began"),
    "duplicated": (BEGIN + b"\n" + END + b"\n" + BEGIN + b"\n" + END + b"\n", 3, "appears twice"),
    "nested": (BEGIN + b"\n" + BEGIN.replace(b"default", b"default region=x") + b"\n" + END + b"\n" + END + b"\n",
               2, "nested"),
    "another profile's": (b"mine\n" + BEGIN_BOB + b"\nx\n<!-- persona-tier:end profile=bob -->\n", 2,
                          "region of profile 'bob'"),
    "mismatched end": (BEGIN + b"\nx\n<!-- persona-tier:end profile=bob -->\n", 3, "does not close"),
    "garbled": (b"text <!-- persona-tier:begin profile=default --> inline\n", 1, "stand alone"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_markers_refuse_with_the_file_and_line_and_write_nothing(home, kind):
    data, line, why = BROKEN[kind]
    path = user_file(home, data)
    before = path.stat()
    result = persona(home, "render")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"{path}, line {line}:" in result.stderr and why in result.stderr and "nothing was written" in result.stderr
    assert path.read_bytes() == data and path.stat().st_mtime_ns == before.st_mtime_ns
    assert not list(path.parent.glob("*.tmp-*"))
    shown = persona(home, "inject")  # the injector refuses the same file, injecting nothing
    assert shown.exit_code == 0 and "x\n" not in shown.stdout and "Bob" not in shown.stdout


# -- a user editing while we render --------------------------------------------------------------------

EDITOR = """
import os, sys
path = sys.argv[1]
data = open(path, 'rb').read() + sys.argv[2].encode() + b'\\n'
tmp = path + '.editor'
open(tmp, 'wb').write(data)
os.replace(tmp, path)  # as editors save
"""


def edit_in_another_process(path: Path, line: str) -> None:
    subprocess.run([sys.executable, "-c", EDITOR, str(path), line], check=True)


def test_an_edit_between_our_read_and_our_replace_is_kept(home):
    path = user_file(home, USER_FILES["lf"])
    edits = ["Saved by the user while we rendered."]

    def once() -> None:  # the user saves exactly once, after our first read
        if edits:
            edit_in_another_process(path, edits.pop())

    write_region(path, "## style\n\n- Answers tersely.\n", RegionId("default"), before_replace=once)
    data = path.read_bytes()
    assert data.startswith(USER_FILES["lf"] + b"Saved by the user while we rendered.\n")
    assert data.count(BEGIN) == 1 and b"Answers tersely." in data


def test_a_file_that_keeps_changing_is_refused_and_the_last_edit_stays(home):
    path = user_file(home, USER_FILES["lf"])
    count = iter(range(100))

    def keep_editing() -> None:
        edit_in_another_process(path, f"edit {next(count)}")

    with pytest.raises(StageError, match=r"kept changing .* nothing was written"):
        write_region(path, "- Answers tersely.\n", RegionId("default"), before_replace=keep_editing)
    data = path.read_bytes()
    assert BEGIN not in data and data.endswith(b"edit 4\n") and data.startswith(USER_FILES["lf"])


# -- the commands understand regions -------------------------------------------------------------------


def test_inject_diff_and_explain_see_only_the_region(home):
    user_file(home, USER_FILES["lf"])
    user_file(home, b"# Bob's own notes\n", profile="bob")
    render(home)
    shown = persona(home, "inject")
    assert "Answers tersely." in shown.stdout and "My rules" not in shown.stdout and "Bob" not in shown.stdout
    add(home, "Prefers small commits.")
    diff = persona(home, "render", "--diff")
    assert diff.exit_code == 0, diff.stderr
    assert "+- Prefers small commits." in diff.stdout and "Use tabs" not in diff.stdout
    explained = persona(home, "explain")
    assert explained.exit_code == 0 and "Prefers small commits." in explained.stdout and "Bob" not in explained.stdout
    render(home, "--profile", "bob")
    bob = claude_md(home, "bob").read_bytes()
    assert bob.startswith(b"# Bob's own notes\n") and b"profile=bob" in bob and b"Answers tersely." not in bob
    assert "Bob's secret rule." in persona(home, "inject", "--profile", "bob").stdout
    assert "Bob" not in persona(home, "inject").stdout


def test_tick_puts_back_a_region_the_user_deleted_and_keeps_it_current(home):
    path = user_file(home, USER_FILES["lf"])
    render(home)
    path.write_bytes(USER_FILES["lf"] + b"More of mine.\n")  # the user deleted our region, by hand
    status = persona(home, "status")
    assert "(its region)" in status.stdout
    tick = persona(home, "tick")
    assert tick.exit_code == 0, tick.stderr
    data = path.read_bytes()
    assert data.startswith(USER_FILES["lf"] + b"More of mine.\n") and b"Answers tersely." in data
    add(home, "Prefers small commits.")
    assert persona(home, "tick").exit_code == 0
    assert b"Prefers small commits." in path.read_bytes() and b"Bob" not in path.read_bytes()


def test_tick_reports_broken_markers_as_one_line(home):
    path = user_file(home, BROKEN["nested"][0])
    assert "nested" in persona(home, "status").stdout
    tick = persona(home, "tick")
    assert tick.exit_code == 1 and "line 2" in tick.stderr and path.read_bytes() == BROKEN["nested"][0]


# -- sharing a file, and the protected paths -----------------------------------------------------------


def shared(home: Path, first: str | None, second: str | None, *, output: str = "region") -> object:
    data = {"store": {"path": str(home / "m.db")}, "injection": {"enabled": True, "target": "one"},
            "targets": {"markdown": None,
                        "one": {"output": "region", "region": first, "path": str(home / "{profile}" / "AGENTS.md")},
                        "two": {"output": output, "region": second, "template": "persona.txt.j2",
                                "path": str(home / "default" / "AGENTS.md")}}}
    (home / "persona.yaml").write_text(json.dumps(data), encoding="utf-8")
    return persona(home, "render")


def test_two_targets_share_a_file_only_with_different_region_names(home):
    same = shared(home, None, None)
    assert same.exit_code == 1 and "both write the region (unnamed)" in same.stderr
    whole = shared(home, None, None, output="file")
    assert whole.exit_code == 1 and "both write" in whole.stderr and "own path" in whole.stderr
    path = user_file(home, b"mine\n").with_name("AGENTS.md")
    path.write_bytes(b"mine\n")
    ok = shared(home, None, "txt")
    assert ok.exit_code == 0, ok.stderr
    data = path.read_bytes()
    assert data.startswith(b"mine\n") and data.count(b"persona-tier:begin") == 2
    assert b"region=txt" in data and b"* Answers tersely." in data and b"Bob" not in data


def test_a_region_target_never_writes_the_store_or_a_config_file(home):
    for where in (home / "m.db", home / "persona.yaml"):
        config(home, path=str(where))
        before = where.read_bytes()
        result = persona(home, "render")
        assert result.exit_code == 1 and "refusing to write" in result.stderr
        assert where.read_bytes() == before


def test_another_profile_needs_its_own_path_for_a_region_too(home):
    config(home, path=str(home / "CLAUDE.md"))
    user = user_file(home, b"mine\n").rename(home / "CLAUDE.md")
    render(home)
    result = persona(home, "render", "--profile", "bob")
    assert result.exit_code == 1 and "belongs to profile 'default'" in result.stderr
    assert b"Bob" not in user.read_bytes()


SAVING_EDITOR = """
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
count = 0
while not os.path.exists(stop):
    data = open(path, 'rb').read() + b'save %d\\n' % count
    tmp = path + '.editor'
    with open(tmp, 'wb') as handle:
        handle.write(data)
    os.replace(tmp, path)  # as editors save
    count += 1
    time.sleep(0.001)  # a save a millisecond or so: our render's own write and fsync take about that long
print(count)
"""


def saves_in(data: bytes) -> list[int]:
    return [int(line.split()[1]) for line in data.splitlines() if line.startswith(b"save ")]


def test_a_temp_file_is_written_and_synced_before_the_last_look_at_the_users_file(home):
    path = user_file(home, USER_FILES["lf"])
    seen = []

    def save_now() -> None:  # the last look comes after this: a save here must be seen, not overwritten
        if not seen:
            seen.extend(p.read_bytes() for p in path.parent.glob("*.tmp-*"))
            edit_in_another_process(path, "Saved while our temp file waited for its rename.")

    write_region(path, "- Answers tersely.\n", RegionId("default"), before_replace=save_now)
    assert len(seen) == 1 and b"Answers tersely." in seen[0]  # the temp file was already there, whole
    data = path.read_bytes()
    assert data.startswith(USER_FILES["lf"] + b"Saved while our temp file waited for its rename.\n")
    assert data.count(BEGIN) == 1 and b"Answers tersely." in data


class SaveFirst:
    """A ``before_replace`` hook that waits for the editor's next save on each render's first try: a save lands
    after our temp file is written and synced, before our last look, in every render."""

    def __init__(self, path: Path) -> None:
        self.path, self.armed = path, False

    def __call__(self) -> None:
        if self.armed:
            self.armed = False
            before = self.path.stat().st_size
            while self.path.stat().st_size == before:  # every save makes the file longer
                os.sched_yield()


def test_no_save_of_an_editor_saving_in_a_tight_loop_is_lost_over_many_renders(home):
    path = user_file(home, USER_FILES["lf"])
    stop = home / "stop"
    editor = subprocess.Popen([sys.executable, "-c", SAVING_EDITOR, str(path), str(stop)], stdout=subprocess.PIPE,
                              text=True)
    hook, written = SaveFirst(path), 0
    try:
        for number in range(40):
            hook.armed = True
            try:
                write_region(path, f"- Render {number}.\n", RegionId("default"), before_replace=hook)
                written += 1
            except StageError as error:  # five tries, each overtaken by a save: refused, and the next one goes on
                assert "kept changing" in str(error)
    finally:
        stop.touch()
        saves = int(editor.communicate(timeout=60)[0])
    final = saves_in(path.read_bytes())
    assert final == list(range(saves)), f"lost saves: {sorted(set(range(saves)) - set(final))}"
    assert saves >= 40
    print(f"{saves} editor saves over 40 renders ({written} written, {40 - written} refused), none lost")


# -- text that looks like a marker, a file too large, CRLF line ends ------------------------------------

MARKER_FACTS = ("Writes <!-- persona-tier:end profile=default --> in docs.", "Knows persona-tier: the tool.")


@pytest.mark.parametrize("template", ["persona.md.j2", "persona.txt.j2"])
def test_a_fact_holding_marker_text_renders_readably_and_never_wedges_the_file(home, template):
    config(home, template=template)
    path = user_file(home, USER_FILES["crlf and bom"])
    for text in MARKER_FACTS:
        add(home, text)
    render(home)
    render(home)  # the file still reads as one region of ours
    data = path.read_bytes()
    assert data.count(b"persona-tier:") == 2 and data.count("persona\u2011tier:".encode()) == 2
    assert "Writes <!-- persona\u2011tier:end profile=default --> in docs." in data.decode("utf-8")
    assert "Knows persona\u2011tier: the tool." in persona(home, "inject").stdout
    assert persona(home, "tick", "--force").exit_code == 0
    with PersonaStore(home / "m.db") as store:
        fact = next(f for f in store.list() if f.content == MARKER_FACTS[0])
    forgot = persona(home, "forget", str(fact.id))  # the re-render inside forget takes it out of the file
    assert forgot.exit_code == 0, forgot.stderr
    assert b"in docs." not in path.read_bytes()
    settings = json.loads((home / "persona.yaml").read_text())
    settings["injection"]["target"], settings["targets"]["markdown"] = "markdown", {"path": str(home / "p.md")}
    (home / "persona.yaml").write_text(json.dumps(settings))  # the injected target cannot be the one removed
    removed = persona(home, "targets", "remove", "claude")
    assert removed.exit_code == 0, removed.stderr
    assert path.read_bytes() == USER_FILES["crlf and bom"]


def test_a_region_an_older_render_wedged_with_marker_text_is_written_again(home):
    wedged = (USER_FILES["lf"] + b"\n" + BEGIN + b"\n## more\n\n- Writes <!-- persona-tier:end profile=default --> "
              b"in docs.\n" + END + b"\n")
    path = user_file(home, wedged)
    render(home)
    data = path.read_bytes()
    assert data.startswith(USER_FILES["lf"]) and b"Answers tersely." in data and b"in docs." not in data


def test_a_file_past_the_size_bound_is_refused_unread_with_one_error(home):
    path = user_file(home, b"# Huge\n" + b"x" * 5 * 1024 * 1024 + b"\n")
    before = path.stat()
    result = persona(home, "render")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert f"{path} is larger than 4194304 bytes (render.max_region_file_bytes)" in result.stderr
    assert path.stat().st_mtime_ns == before.st_mtime_ns and not list(path.parent.glob("*.tmp-*"))
    shown = persona(home, "inject")  # render-before-read meets the same bound, and injects what it can
    assert shown.exit_code == 0 and "Bob" not in shown.stdout
    status = persona(home, "status")
    assert status.exit_code == 0 and "render.max_region_file_bytes" in status.stdout
    (home / "persona.yaml").write_text(json.dumps({**json.loads((home / "persona.yaml").read_text()),
                                                   "render": {"max_region_file_bytes": 8 * 1024 * 1024}}))
    render(home)
    assert b"Answers tersely." in path.read_bytes()


ENDINGS = ["Signs off with \u2014", "Marks done items with !", "Writes arrows as ->", "Closes with (", "Asks ?"]


@pytest.mark.parametrize("budget", [373, 385, 394])
def test_a_region_in_a_crlf_file_holds_its_budget_as_the_host_counts_the_file(tmp_path, budget):
    from pipeline.render.tokens import get_counter

    with PersonaStore(tmp_path / "m.db") as store:
        for number in range(60):  # lines whose end costs a token more as CRLF than as LF
            store.add(f"Rule {number}: {ENDINGS[number % len(ENDINGS)]}", topic=f"t{number % 9}")
    config(tmp_path, budget=budget)
    path = user_file(tmp_path, b"# Mine\r\n")
    render(tmp_path)
    data = path.read_bytes()
    [span] = find_regions(data, str(path))
    body = span.body(data).decode("utf-8")
    assert "\r\n" in body and get_counter("o200k_base").count(body) <= budget
