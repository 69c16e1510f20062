"""Drive the real coding-agent CLIs, installed by `make test-hosts` into var/hosts, against a FakeModel.

    with FakeModel() as model:
        requests = run_claude(model, project, home, "hello")          # claude -p "hello"
        requests = run_codex(model, project, home, "hello")           # codex exec --skip-git-repo-check "hello"
        requests = run_gemini(model, project, home, "hello")          # gemini -p "hello"
        requests = run_opencode(model, project, home, "hello")        # opencode run "hello"
        persona(home, "targets", "add", "codex", "--user")            # our CLI, as the user runs it

Each run gets only the environment a user's shell would hand the CLI for the fake model: PATH, the test's HOME
(never the real one), a TMPDIR inside it, and each host's own base-URL and key variables. The host's config
files (~/.codex/config.toml, ~/.gemini/settings.json, OpenCode's file named in OPENCODE_CONFIG) are written here,
with its telemetry, update checks and other calls home turned off; a test passes more with the host's own flags
(``run_codex(..., "-c", "project_doc_max_bytes=65536")``). A run returns the requests it made, in order, and raises
HostFailed when the CLI cannot start, exits non-zero or runs past TIMEOUT.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .fake_model import FakeModel, Request

REPO = Path(__file__).resolve().parents[2]
PINS = Path(__file__).with_name("package.json")
HOSTS_DIR = Path(os.environ.get("PERSONA_TEST_HOSTS_DIR", REPO / "var" / "hosts"))
PERSONA = Path(sys.executable).parent / "persona"  # the checkout's own CLI, in the venv running the tests
TIMEOUT = 180


class HostFailed(AssertionError):
    """A CLI could not be found, could not start, or exited non-zero: the test fails with this message."""


@dataclass(frozen=True)
class Host:
    name: str  # as in `persona targets add NAME`
    package: str  # on the npm registry
    command: str  # its bin
    binary: str | None = None  # the executable under node_modules, where the package declares no bin

    @property
    def version(self) -> str:
        """The exact version tests/hosts/package.json pins."""
        return str(json.loads(PINS.read_text())["dependencies"][self.package])

    def __str__(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def path(self) -> Path:
        return HOSTS_DIR / "node_modules" / (self.binary or f".bin/{self.command}")


CLAUDE = Host("claude-code", "@anthropic-ai/claude-code", "claude")
CODEX = Host("codex", "@openai/codex", "codex")
GEMINI = Host("gemini", "@google/gemini-cli", "gemini")
# opencode-ai's build for this platform, the executable its bin runs: the registry serves opencode-ai's other
# platforms' packages as 404, so `npm ci` cannot install opencode-ai itself from a lock (docs/hosts.md)
OPENCODE = Host("opencode", "opencode-linux-x64", "opencode", binary="opencode-linux-x64/bin/opencode")
HOSTS = (CLAUDE, CODEX, GEMINI, OPENCODE)


@cache
def check(host: Host) -> None:
    """Raise HostFailed, saying why, unless ``host``'s pinned version is installed and starts."""
    if not host.path.exists():
        raise HostFailed(f"{host}: {host.path} is missing; `make test-hosts` installs it (npm ci into {HOSTS_DIR})")
    try:
        with tempfile.TemporaryDirectory() as home:
            done = subprocess.run([str(host.path), "--version"], env=base_env(Path(home)), capture_output=True,
                                  text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HostFailed(f"{host}: `{host.command} --version` could not run: {error}") from None
    if done.returncode != 0 or host.version not in done.stdout:
        raise HostFailed(f"{host}: `{host.command} --version` said {done.stdout.strip()!r} (exit {done.returncode})"
                         f"; stderr: {done.stderr.strip()[-1000:]}")


def base_env(home: Path) -> dict[str, str]:
    """What every run starts from: no variable of the machine's beyond PATH, so no real key or config leaks in."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(home), "TERM": "dumb", "NO_COLOR": "1",
            "LANG": "C.UTF-8"}


def run(host: Host, model: FakeModel, project: Path, home: Path, args: list[str], env: dict[str, str]) -> list[Request]:
    """Run ``host`` with ``args`` in ``project``; the requests the fake model received meanwhile."""
    check(host)
    first = len(model.requests)
    out, err, code = _run([str(host.path), *args], project, base_env(home) | env)
    if code is None:
        raise HostFailed(f"{host} {args} ran past {TIMEOUT} s and was stopped\nstderr: {err[-3000:]}\n"
                         f"requests so far:\n{model.dump()}")
    if code != 0:
        raise HostFailed(f"{host} {args} exited {code}\nstdout: {out[-3000:]}\nstderr: {err[-3000:]}\n"
                         f"requests:\n{model.dump()}")
    return model.requests[first:]


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, str, int | None]:
    """Output and exit code (None: timed out). A session of its own, so a timeout also stops what the CLI
    started (Codex's npm bin is a node wrapper around the native binary)."""
    with subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return out, err, None
    return out, err, process.returncode


# -- Claude Code ----------------------------------------------------------------------------------------------

CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "fake-key",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, error reports or update checks
}


def run_claude(model: FakeModel, project: Path, home: Path, prompt: str, *flags: str) -> list[Request]:
    """``claude -p PROMPT [FLAGS]``: Claude Code reads ANTHROPIC_BASE_URL."""
    return run(CLAUDE, model, project, home, ["-p", prompt, *flags], CLAUDE_ENV | {"ANTHROPIC_BASE_URL": model.url})


class ClaudeSession:
    """One Claude Code session taking prompts one at a time (``claude -p --input-format stream-json``), so a
    test can act between turns: ``/compact`` compacts the session in place, with no resume in between.

        with ClaudeSession(model, project, home) as session:
            session.send("hello")          # the requests this turn made
            session.send("/compact")
    """

    def __init__(self, model: FakeModel, project: Path, home: Path) -> None:
        check(CLAUDE)
        self.model = model
        env = base_env(home) | CLAUDE_ENV | {"ANTHROPIC_BASE_URL": model.url}
        args = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        self.process = subprocess.Popen([str(CLAUDE.path), *args], cwd=project, env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self.events.put(json.loads(line))
        self.events.put(None)

    def send(self, prompt: str) -> list[Request]:
        """One user message; returns when Claude Code reports the turn's result."""
        assert self.process.stdin is not None
        first = len(self.model.requests)
        message = {"type": "user", "message": {"role": "user", "content": prompt}}
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        while (event := self._next(prompt)) is not None:
            if event.get("type") == "result":
                if event.get("is_error"):
                    raise HostFailed(f"{CLAUDE} {prompt!r}: {event}\nrequests:\n{self.model.dump()}")
                return self.model.requests[first:]
        raise HostFailed(f"{CLAUDE} ended during {prompt!r}: {self._stderr()}\nrequests:\n{self.model.dump()}")

    def _next(self, prompt: str) -> dict[str, Any] | None:
        try:
            return self.events.get(timeout=TIMEOUT)
        except queue.Empty:
            raise HostFailed(f"{CLAUDE} gave no result for {prompt!r} in {TIMEOUT} s\nrequests:\n"
                             f"{self.model.dump()}") from None

    def _stderr(self) -> str:
        self.process.wait(10)
        return self.process.stderr.read()[-3000:] if self.process.stderr else ""

    def __enter__(self) -> ClaudeSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def claude_hook(home: Path, command: str, matcher: str = "startup|resume|clear|compact") -> None:
    """A SessionStart command hook in ~/.claude/settings.json, as docs/hosts.md tells the user to add it."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    hook = {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [hook]}}, indent=2))


# -- Codex ----------------------------------------------------------------------------------------------------


def run_codex(model: FakeModel, project: Path, home: Path, prompt: str, *flags: str) -> list[Request]:
    """``codex exec --skip-git-repo-check [FLAGS] PROMPT``, its model provider the fake model; a test sets more
    of config.toml with Codex's own ``-c key=value`` flags."""
    toml = home / ".codex" / "config.toml"
    toml.parent.mkdir(parents=True, exist_ok=True)
    toml.write_text(CODEX_CONFIG.format(url=model.url))
    return run(CODEX, model, project, home, ["exec", "--skip-git-repo-check", *flags, prompt],
               {"FAKE_MODEL_KEY": "fake-key"})


CODEX_CONFIG = """model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


# -- Gemini CLI -----------------------------------------------------------------------------------------------

GEMINI_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},  # else it sends usage statistics home
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def run_gemini(model: FakeModel, project: Path, home: Path, prompt: str, *flags: str) -> list[Request]:
    """``gemini -p PROMPT``: API-key auth, GOOGLE_GEMINI_BASE_URL, the workspace trusted."""
    settings = home / ".gemini" / "settings.json"
    if not settings.exists():
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps(GEMINI_SETTINGS, indent=2))
    env = {"GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": model.url, "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    return run(GEMINI, model, project, home, ["-p", prompt, *flags], env)


# -- OpenCode -------------------------------------------------------------------------------------------------


def opencode_config(url: str) -> dict[str, Any]:
    """The fake model as an OpenAI-compatible provider, through the provider package OpenCode bundles (no
    download); no update check, no sharing."""
    return {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
            "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                                  "options": {"baseURL": f"{url}/v1", "apiKey": "fake-key"},
                                  "models": {"fake-model": {"name": "Fake model"}}}},
            "model": "fake/fake-model", "small_model": "fake/fake-model"}


def run_opencode(model: FakeModel, project: Path, home: Path, prompt: str, *flags: str) -> list[Request]:
    """``opencode run --title T [FLAGS] PROMPT``: its config in a file of the test's own (OPENCODE_CONFIG), so the
    user's config folder holds only what the test puts there; a title given, so OpenCode makes no title-generating
    call beside the turn's (one request a turn, the one that carries the instructions)."""
    config = home / "opencode-test.json"
    config.write_text(json.dumps(opencode_config(model.url), indent=2))
    env = {"OPENCODE_CONFIG": str(config), "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    return run(OPENCODE, model, project, home, ["run", "--title", "persona-tier test", *flags, prompt], env)


# -- persona-tier ---------------------------------------------------------------------------------------------


def persona(home: Path, *args: str) -> str:
    """Our CLI as the user runs it: the test's HOME, so its default config and store are the test's own."""
    done = subprocess.run([str(PERSONA), *args], env=base_env(home), capture_output=True, text=True, timeout=120,
                          cwd=home, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"persona {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr
