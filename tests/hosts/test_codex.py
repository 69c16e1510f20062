"""The real Codex (`codex exec`) reads what our presets give it: once, beside the user's own text, and
within its project_doc_max_bytes (32 KiB).

Everything is checked in the requests the fake model received. Codex 0.171.0 sends its AGENTS.md chain in
one user message: ~/.codex/AGENTS.md first, then each project file from the git root down to the working
directory, each quoted as it is on disk, our region's markers included.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .facts import (
    FACTS,
    OWN_PROJECT,
    OWN_USER,
    add_facts,
    add_scoped_facts,
    assert_each_fact_once,
    assert_intact,
    assert_scoped_facts,
    main_request,
    user_and_project_regions,
    write_own,
)
from .fake_model import FakeModel, Request
from .hosts import CODEX, PERSONA, Host, base_env, persona, run_codex

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("host", [CODEX], ids=str, indirect=True)]
PROJECT_DOC_MAX_BYTES = 32 * 1024  # Codex's default


def own_files(home: Path, project: Path) -> tuple[Path, Path]:
    return write_own(home / ".codex" / "AGENTS.md", OWN_USER), write_own(project / "AGENTS.md", OWN_PROJECT)


def house_rules(size: int) -> str:
    """A user's own AGENTS.md text of ``size`` bytes (ASCII), whole lines."""
    line = "- House rule {:05d}: keep the build green and every test fast.\n"
    return "".join(line.format(index) for index in range(size // len(line.format(0))))


def sent(request: Request, path: Path) -> bool:
    """Whether the file's whole text, as on disk, is in the request."""
    return path.read_text().strip() in request.text


@pytest.mark.parametrize("scope", ["--user", "--project"])
def test_a_region_reaches_codex_once_beside_the_users_own_text(
        host: Host, scope: str, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    user_file, project_file = own_files(home, project)
    persona(home, "targets", "add", "codex", *([scope] if scope == "--user" else [scope, str(project)]))
    add_facts(home)
    add_scoped_facts(home, "codex", project, tmp_path / "elsewhere")
    persona(home, "render")
    request = main_request(run_codex(model, project, home, "hello"))
    assert_scoped_facts(request, project=scope == "--project")  # a user-level file: no project's facts
    # our region goes under each file's `# Title` (#49): the user's text arrives whole on either side of it
    assert_intact(request, *OWN_USER.split("\n\n", 1), *OWN_PROJECT.split("\n\n", 1), user_file.read_text(),
                  project_file.read_text())


def test_with_a_user_and_a_project_region_codex_gets_each_fact_of_its_scopes_once(
        host: Host, model: FakeModel, home: Path, project: Path, tmp_path: Path) -> None:
    """Both presets at once (the user-level file and the project's): the host reads each fact of its scopes
    once."""
    own_files(home, project)
    user_and_project_regions(home, "codex", project, tmp_path / "elsewhere")
    request = main_request(run_codex(model, project, home, "hello"))
    assert_scoped_facts(request, project=True)


def test_a_region_at_the_start_of_a_56_kb_agents_md_reaches_codex_whole(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """Codex drops what is past 32 KiB: the preset puts our region at the start of AGENTS.md, where Codex reads
    first, and `targets check` says it is kept."""
    agents = write_own(project / "AGENTS.md", house_rules(55_000))
    persona(home, "targets", "add", "codex", "--project", str(project))
    add_facts(home)
    persona(home, "render")
    assert agents.stat().st_size > 54_000 and agents.read_text().startswith("<!-- persona-tier:begin")
    assert "codex: kept" in persona(home, "targets", "check")
    request = main_request(run_codex(model, project, home, "hello"))
    assert_each_fact_once(request)
    assert "persona-tier:end" in request.text


def test_a_region_at_the_end_past_32_kib_is_cut_and_targets_check_says_so(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """A region moved to the end of a 56 KB AGENTS.md: Codex sends the file's first 32 KiB, cut mid-line, and
    our region not at all; `targets check` said so beforehand, exiting 1."""
    agents = write_own(project / "AGENTS.md", house_rules(55_000))
    persona(home, "targets", "add", "codex", "--project", str(project))
    persona(home, "config", "set", "targets.codex.region_at", "end")
    add_facts(home)
    persona(home, "render")
    assert agents.read_text().rstrip().endswith("-->")
    said = check_fails(home)
    assert "codex: cut after 0 bytes: move the region or shorten the files" in said
    request = main_request(run_codex(model, project, home, "hello"))
    head = agents.read_bytes()[:PROJECT_DOC_MAX_BYTES].decode()
    assert head in request.text and agents.read_bytes()[:PROJECT_DOC_MAX_BYTES + 1].decode() not in request.text
    assert not any(fact in request.text for fact in FACTS.values())
    assert "persona-tier:begin" not in request.text


def check_fails(home: Path) -> str:
    """`persona targets check` as the user runs it, expected to exit 1 (a target would be cut)."""
    done = subprocess.run([str(PERSONA), "targets", "check"], env=base_env(home), capture_output=True, text=True,
                          timeout=120, cwd=home, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, (done.stdout, done.stderr)
    return done.stdout


def test_codex_counts_32_kib_over_the_whole_project_chain(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """The budget is the chain's, not the file's: a 32 KB AGENTS.md at the git root leaves a small AGENTS.md
    in a subdirectory, though either file alone fits, a few hundred bytes, and our region at its start is cut
    short (its end marker lost): `targets check` says where."""
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    root = write_own(project / "AGENTS.md", house_rules(32_700))
    nested = write_own(project / "service" / "AGENTS.md", OWN_PROJECT)
    persona(home, "targets", "add", "codex", "--project", str(nested.parent))
    add_facts(home)
    persona(home, "render")
    assert nested.stat().st_size < 1_000
    request = main_request(run_codex(model, nested.parent, home, "hello"))
    assert sent(request, root) and OWN_PROJECT.strip() not in request.text  # after our region: past the budget
    assert "persona-tier:begin" in request.text and "persona-tier:end" not in request.text
    assert not sent(request, nested)
    left = PROJECT_DOC_MAX_BYTES - root.stat().st_size - len("# This project\n\n")  # ours starts under the title
    assert f"codex: cut after {left:,} bytes: move the region or shorten the files" in check_fails(home)


def test_codex_reads_the_users_own_file_outside_the_32_kib_budget(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """~/.codex/AGENTS.md does not count towards project_doc_max_bytes: 40 KB of the user's text and our
    region after it arrive whole, beside a project file."""
    user_file = write_own(home / ".codex" / "AGENTS.md", house_rules(40_000))
    project_file = write_own(project / "AGENTS.md", OWN_PROJECT)
    persona(home, "targets", "add", "codex", "--user")
    add_facts(home)
    persona(home, "render")
    assert user_file.stat().st_size > PROJECT_DOC_MAX_BYTES
    request = main_request(run_codex(model, project, home, "hello"))
    assert sent(request, user_file) and sent(request, project_file)
    assert_each_fact_once(request)


def test_the_region_at_the_start_follows_the_users_title(
        host: Host, model: FakeModel, home: Path, project: Path) -> None:
    """#49: the user's AGENTS.md opens with its `# Title`; our region goes under it, and Codex sends the title
    first, then each fact once, then the rest of the user's text whole."""
    agents = write_own(project / "AGENTS.md", OWN_PROJECT)
    persona(home, "targets", "add", "codex", "--project", str(project))
    add_facts(home)
    persona(home, "render")
    assert agents.read_text().startswith("# This project\n\n<!-- persona-tier:begin")
    request = main_request(run_codex(model, project, home, "hello"))
    assert_each_fact_once(request)
    text = request.text
    assert text.index("# This project") < text.index(FACTS["git"]) < text.index("Run `make check` before every")
