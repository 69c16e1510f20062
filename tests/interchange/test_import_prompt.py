"""`persona import --prompt ASSISTANT` (issue 53, point 5): a prompt to paste into the old assistant, whose answer,
pasted whole into `persona import -`, brings its memory in: new facts added, those already there left as the user
has them, a changed one proposed against the old fact. Both backends, two profiles, two projects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.interchange.formats.assistant import MARK

NPM, PNPM = "Uses npm for JavaScript projects", "Uses pnpm for JavaScript projects"
SHOP = "project:github.com/acme/shop"
# What ChatGPT answered to the prompt, copied with its own "copy" button: prose and fences around the block.
ANSWER = f"""Sure! Here's everything I remember about you, in the format you asked for:

```text
{MARK}
## style
- Prefers short, direct answers without preamble.
- Uses British spelling.
## tools
- {PNPM}.
- Works mostly in Python and Rust; uses uv, never pip.
## work
- Works as a backend engineer at a logistics company.
- Is building a side project called Shiplog
  with a friend.
(nothing else saved)
```

Let me know if you'd like me to forget any of these!
"""


def cli(database, tmp_path: Path, *args: str, stdin: str | None = None):
    base = ["--db", str(database.target), "--set", f"injection.file={tmp_path / 'p-{profile}.md'}"]
    return CliRunner().invoke(app, [*base, *args], input=stdin)


@pytest.mark.parametrize("assistant", ["chatgpt", "claude", "gemini", "copilot"])
def test_each_prompt_asks_for_the_form_import_reads(assistant, tmp_path):
    printed = CliRunner().invoke(app, ["import", "--prompt", assistant])
    assert printed.exit_code == 0, printed.output
    assert f'the first line is exactly "{MARK}"' in printed.output and "## topic" in printed.output
    assert {"chatgpt": "Saved memories".lower(), "claude": "every project", "gemini": "saved info",
            "copilot": "personalization"}[assistant] in printed.output.lower()


def test_a_bad_prompt_request_is_one_clear_error():
    unknown = CliRunner().invoke(app, ["import", "--prompt", "bard"])
    assert unknown.exit_code == 1 and "no import prompt for 'bard'; known: chatgpt, claude, gemini, copilot" in \
        unknown.output
    both = CliRunner().invoke(app, ["import", "--prompt", "claude", "facts.yaml"])
    assert both.exit_code == 1 and "--prompt prints a prompt and imports nothing" in both.output
    neither = CliRunner().invoke(app, ["import"])
    assert neither.exit_code == 1 and "give the file to import" in neither.output


def test_an_answer_pasted_into_import_adds_what_is_new_and_proposes_what_changed(database, tmp_path):
    alice, bob = database.store(profile="alice"), database.store(profile="bob")
    terse = alice.add("Prefers short, direct answers without preamble", topic="communication").fact
    npm = alice.add(NPM, topic="tools").fact
    shop_npm = alice.add(NPM, topic="tools", scope=SHOP).fact  # the shop's own rule: a global answer leaves it be
    alice.add("Builds the shop with make.", topic="build", scope=SHOP)
    bob.add(NPM, topic="tools")
    done = cli(database, tmp_path, "import", "-", "-p", "alice", "--json", stdin=ANSWER)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["format"] == "assistant" and report["file"] == "<stdin>"
    assert report["unchanged"] == [terse.id]  # already there, under another topic: left as the user has it
    facts = {fact.content: fact for fact in alice.list()}
    assert set(facts) - {NPM, "Builds the shop with make.", terse.content} == {
        "Uses British spelling.", PNPM + ".", "Works mostly in Python and Rust; uses uv, never pip.",
        "Works as a backend engineer at a logistics company.", "Is building a side project called Shiplog with a "
        "friend."}
    assert len(report["added"]) == 5 and not report["refused"]
    assert facts[PNPM + "."].topic == "tools" and facts[PNPM + "."].scope is None
    assert [(p["old"]["id"], p["new"]["content"]) for p in report["proposals"]] == [(npm.id, PNPM + ".")]
    assert [(p.old.id, p.new.content) for p in alice.proposals()] == [(npm.id, PNPM + ".")]
    assert shop_npm.id in {fact.id for fact in alice.list()}
    assert facts[PNPM + "."].writer.startswith("import:assistant:")
    assert [f.content for f in bob.list()] == [NPM] and bob.proposals() == []
    again = json.loads(cli(database, tmp_path, "import", "-", "-p", "alice", "--json", stdin=ANSWER).output)
    assert again["added"] == [] and len(again["unchanged"]) == 6  # idempotent


def test_a_facts_file_on_standard_input_is_still_a_facts_file(database, tmp_path):
    facts = "facts:\n  - topic: style\n    content: Answers tersely.\n    tier: permanent\n"
    done = cli(database, tmp_path, "import", "-", "-p", "alice", "--json", stdin=facts)
    assert done.exit_code == 0 and json.loads(done.output)["format"] == "facts"
    assert [f.tier for f in database.store(profile="alice").list()] == ["permanent"]
