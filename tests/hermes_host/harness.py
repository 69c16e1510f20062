"""Drive the REAL Hermes Agent CLI (hermes-agent 0.19.0) against fake_llm.FakeLLM, the way `hermes chat` runs.

One Hermes "CLI session" per Python process: ``cli.py`` snapshots config.yaml
into ``cli.CLI_CONFIG`` at import time, and the plugin manager / tool registry /
memory-provider modules are process-global.  Use a subprocess per HERMES_HOME.

    srv = FakeLLM().start()
    home = make_home(srv.base_url, root, mnemosyne=True)
    s = H.CLISession(home)      # sets HERMES_HOME/HOME/cwd, imports Hermes, builds HermesCLI
    s.turn("hello")             # process_loop thread -> HermesCLI.chat() -> new "Thread-N (run_agent)"
    s.compress()                # process_loop thread -> process_command("/compress")
    s.auto_compact()            # automatic compaction on a turn thread
    s.auto_compact_no_progress()
    s.switch_model("m2")        # /model runs inline on the caller (UI/main) thread, like the CLI
    s.close()                   # cli._run_cleanup() on the main thread (what atexit does)
    s.logs.problems()           # [] unless "SQLite objects created in a thread"/"shutdown failed"
    s.net.off_box()             # [] unless something tried a non-loopback connect / DNS lookup
"""
from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VENV_BIN = Path(sys.executable).parent  # the test venv: hermes, mnemosyne-install and persona live here

# --------------------------------------------------------------------------
# (a) a fresh HERMES_HOME
# --------------------------------------------------------------------------

CONTEXT_LENGTH = 64000   # Hermes refuses main models < 64K (agent_init: MINIMUM_CONTEXT_LENGTH)


def config_dict(base_url: str, *, model: str = "fake-model",
                memory_provider: str | None = None,
                plugins_enabled: list[str] = (),
                background_review: bool = False,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "model": {
            "provider": "custom",          # plain OpenAI-compatible endpoint
            "base_url": base_url,          # http://127.0.0.1:PORT/v1
            "default": model,
            "api_key": "sk-fake-harness",  # dummy; sent as "Authorization: Bearer ..."
            "context_length": CONTEXT_LENGTH,
        },
        "agent": {
            "environment_probe": False,    # else ~1.7 s of subprocess probing per prompt build
        },
        "security": {
            "tirith_enabled": False,       # else it tries to download the tirith binary (network)
            "allow_lazy_installs": False,  # else it pip-installs edge-tts for the TTS tool (network, ~9 s)
        },
        "auxiliary": {
            "title_generation": {"enabled": False},   # keep the request log to chat + summary
        },
        "plugins": {"enabled": list(plugins_enabled)},
        "memory": {},
        "skills": {},
    }
    if memory_provider:
        cfg["memory"]["provider"] = memory_provider
    if not background_review:
        # the "bg-review" fork (agent/background_review.py) fires every 10 user
        # turns, calls the model from its own thread and races the test's turns
        cfg["memory"]["nudge_interval"] = 0
        cfg["skills"]["creation_nudge_interval"] = 0
    for k, v in (extra or {}).items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k].update(v)
        else:
            cfg[k] = v
    return {k: v for k, v in cfg.items() if v != {}}


@dataclass
class Home:
    root: Path            # temp dir; also used as $HOME and as cwd
    home: Path            # $HERMES_HOME = root/hermes_home

    @property
    def config_path(self) -> Path:
        return self.home / "config.yaml"

    def config(self) -> dict[str, Any]:
        import yaml
        return yaml.safe_load(self.config_path.read_text()) or {}

    def env(self) -> dict[str, str]:
        return hermes_env(self)

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        p = self.home / name
        if not p.exists():
            return []
        return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def make_home(base_url: str, root: Path, *, memory_provider: str | None = None,
              plugins_enabled: list[str] = (), mnemosyne: bool = False, background_review: bool = False,
              extra: dict[str, Any] | None = None) -> Home:
    """Create root/hermes_home with config.yaml, optionally run ``mnemosyne-install``."""
    import yaml
    r = Path(root)
    h = Home(root=r, home=r / "hermes_home")
    (h.home / "plugins").mkdir(parents=True, exist_ok=True)
    (r / "work").mkdir(exist_ok=True)
    h.config_path.write_text(yaml.safe_dump(
        config_dict(base_url, memory_provider=None if mnemosyne else memory_provider,
                    plugins_enabled=plugins_enabled, background_review=background_review,
                    extra=extra), sort_keys=False))
    # /model -> hermes_cli.model_switch / providers / model_cost_guard call
    # agent.models_dev.fetch_models_dev(), which GETs https://models.dev/api.json
    # unless $HERMES_HOME/models_dev_cache.json is non-empty and < 1 h old.
    (h.home / "models_dev_cache.json").write_text(json.dumps(
        {"harness-offline": {"id": "harness-offline", "name": "offline stub", "models": {}}}))
    # `hermes chat` (cmd_chat) prefetches an update check (PyPI / git ls-remote)
    # unless $HERMES_HOME/.update_check is < 6 h old for this version.
    try:
        from hermes_cli import __version__ as _ver
    except Exception:
        _ver = "0.19.0"
    (h.home / ".update_check").write_text(json.dumps(
        {"ts": time.time(), "behind": 0, "rev": None, "ver": _ver}))
    if mnemosyne:
        install_mnemosyne(h)
        assert (h.config().get("memory") or {}).get("provider") == "mnemosyne", h.config_path.read_text()
    return h


def hermes_env(h: Home, **over: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "HERMES_HOME": str(h.home),
        "HOME": str(h.root),                  # nothing leaks into the real ~
        "HERMES_EXIT_WATCHDOG_S": "0",        # _run_cleanup() would os._exit(0) the process 30 s later
        "NO_COLOR": "1",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(over)
    return env


def install_mnemosyne(h: Home) -> subprocess.CompletedProcess:
    """``mnemosyne-install`` takes no flags: it uses $HERMES_HOME, symlinks
    $HERMES_HOME/plugins/mnemosyne -> site-packages/hermes_memory_provider,
    appends ``memory: {provider: mnemosyne}`` to config.yaml and verifies."""
    p = subprocess.run([str(VENV_BIN / "mnemosyne-install")], env=hermes_env(h),
                       capture_output=True, text=True, timeout=120, cwd=str(h.root))
    if p.returncode != 0:
        raise RuntimeError(f"mnemosyne-install failed:\n{p.stdout}\n{p.stderr}")
    return p


def hermes_cmd(h: Home, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    """Run the real ``hermes`` console script against the temp home."""
    return subprocess.run([str(VENV_BIN / "hermes"), *args], env=hermes_env(h),
                          capture_output=True, text=True, timeout=timeout,
                          cwd=str(h.root / "work"), stdin=subprocess.DEVNULL)


# --------------------------------------------------------------------------
# log capture
# --------------------------------------------------------------------------

PROBLEM_PATTERNS = (
    "SQLite objects created in a thread",
    "shutdown failed",
    "check_same_thread",
)


@dataclass
class LogRec:
    t: float
    name: str
    level: str
    thread: str
    msg: str


class LogCapture(logging.Handler):
    """Root-logger handler keeping every record (DEBUG and up) in memory.

    Memory-manager hook failures are logged at DEBUG (on_pre_compress,
    on_session_switch, on_turn_start) or WARNING (initialize,
    system_prompt_block, shutdown), so capture from DEBUG."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.records: list[LogRec] = []
        self._lk = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            msg = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            msg += f" | {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        with self._lk:
            self.records.append(LogRec(record.created, record.name, record.levelname,
                                       record.threadName, msg))

    def find(self, needle: str) -> list[LogRec]:
        with self._lk:
            return [r for r in self.records if needle in r.msg]

    def problems(self, patterns=PROBLEM_PATTERNS) -> list[LogRec]:
        with self._lk:
            return [r for r in self.records if any(p in r.msg for p in patterns)]

    def mark(self) -> int:
        return len(self.records)

    def since(self, mark: int) -> list[LogRec]:
        with self._lk:
            return list(self.records[mark:])


# --------------------------------------------------------------------------
# network / subprocess audit (PEP 578 audit hook; cannot be removed once added)
# --------------------------------------------------------------------------

_LOOPBACK = ("127.0.0.1", "::1", "localhost", "0.0.0.0")


class NetAudit:
    """Records every socket.connect / getaddrinfo / subprocess spawn in-process."""

    def __init__(self):
        self.events: list[tuple] = []
        self.active = True
        sys.addaudithook(self._hook)

    def _hook(self, event, args):
        if not self.active:
            return
        try:
            if event == "socket.connect":
                addr = args[1]
                if isinstance(addr, tuple):
                    self.events.append(("connect", str(addr[0]), addr[1] if len(addr) > 1 else None,
                                        threading.current_thread().name))
                else:
                    self.events.append(("connect-unix", str(addr), None, threading.current_thread().name))
            elif event == "socket.getaddrinfo":
                self.events.append(("getaddrinfo", str(args[0]), args[1], threading.current_thread().name))
            elif event == "subprocess.Popen":
                exe, argv = args[0], args[1]
                self.events.append(("spawn", str(exe), " ".join(map(str, argv or []))[:200],
                                    threading.current_thread().name))
        except Exception:
            pass

    def off_box(self) -> list[tuple]:
        """Non-loopback connects and name lookups of non-loopback hosts."""
        out = []
        for ev in list(self.events):
            kind, host = ev[0], ev[1]
            if kind in ("connect", "getaddrinfo") and host not in _LOOPBACK and not host.startswith("127."):
                out.append(ev)
        return out

    def spawns(self) -> list[tuple]:
        return [e for e in list(self.events) if e[0] == "spawn"]


# --------------------------------------------------------------------------
# (b)-(g) the CLI session
# --------------------------------------------------------------------------

class CLISession:
    """A real ``cli.HermesCLI`` driven the way ``hermes chat`` drives it.

    Startup mirrors ``hermes`` -> ``hermes_cli.main`` (import: .env load +
    ``setup_logging(mode="cli")``) -> ``_prepare_agent_startup`` (``discover_plugins()``)
    -> ``cmd_chat`` -> ``cli.main`` (toolset selection, ``HermesCLI(...)``).
    Interaction mirrors ``HermesCLI.run()``: one long-lived ``process_loop``
    thread receives every input; plain text goes to ``HermesCLI.chat()`` (which
    starts a NEW ``run_agent`` thread per turn and joins it) and slash commands
    go to ``HermesCLI.process_command()`` on the process_loop thread itself,
    except ``/model``, which run()'s key handler executes inline on the UI
    (main) thread.  ``HermesCLI.run()`` itself (prompt_toolkit app, banner,
    signal/atexit handlers) is not used: it needs a TTY.
    """

    def __init__(self, h: Home, *, capture_stdout: str | None = None):
        self.h = h
        t0 = time.time()
        os.environ.update(hermes_env(h))
        os.environ["HERMES_INTERACTIVE"] = "1"   # cli.main() sets this for `hermes chat`
        os.chdir(h.root / "work")          # cwd feeds the system prompt + coding posture
        self._stdout_file = None
        if capture_stdout:
            self._stdout_file = open(capture_stdout, "a", buffering=1)  # noqa: SIM115 - closed by close()
            sys.stdout = self._stdout_file

        self.logs = LogCapture()
        self.net = NetAudit()
        import hermes_cli.main  # noqa: F401  (hermes startup side effects: dotenv + setup_logging)
        root = logging.getLogger()
        root.addHandler(self.logs)
        root.setLevel(logging.DEBUG)

        # _prepare_agent_startup(args) for `chat`
        from hermes_cli.plugins import discover_plugins
        discover_plugins()

        import cli as _cli
        self.climod = _cli
        self.cli = _cli.HermesCLI(toolsets=cli_toolsets(_cli.CLI_CONFIG))
        self.startup_s = time.time() - t0

        self._q: queue.Queue = queue.Queue()

        def process_loop():                  # same function name -> "Thread-N (process_loop)"
            while True:
                item = self._q.get()
                if item is None:
                    return
                fn, box, done = item
                try:
                    box["result"] = fn()
                except BaseException as e:    # pragma: no cover
                    box["error"] = e
                finally:
                    done.set()

        self.process_thread = threading.Thread(target=process_loop, daemon=True)
        self.process_thread.start()

    # -- plumbing -----------------------------------------------------------
    def on_process_loop(self, fn: Callable[[], Any], timeout: float = 120) -> Any:
        box: dict[str, Any] = {}
        done = threading.Event()
        self._q.put((fn, box, done))
        if not done.wait(timeout):
            raise TimeoutError("process_loop call timed out")
        if "error" in box:
            raise box["error"]
        return box.get("result")

    @property
    def agent(self):
        return self.cli.agent

    # -- (c) one user turn on a brand-new thread ------------------------------
    def turn(self, text: str) -> str | None:
        return self.on_process_loop(lambda: self.cli.chat(text))

    # -- (d)/(g) slash commands --------------------------------------------------
    def command(self, cmd: str) -> Any:
        """Dispatch a slash command where the interactive CLI would.

        HermesCLI.run()'s Enter handler runs ``/model`` (and ``/steer`` while a
        turn is running) directly on the prompt_toolkit UI thread - the main
        thread, which runs ``app.run()`` - every other slash command is queued
        to the ``process_loop`` thread (``process_command``)."""
        if self.cli._should_handle_model_command_inline(cmd):
            return self.cli.process_command(cmd)          # UI thread == caller (MainThread)
        return self.on_process_loop(lambda: self.cli.process_command(cmd))

    def compress(self, focus: str = "") -> Any:
        """/compress -> HermesCLI._manual_compress -> agent._compress_context(
        history, None, approx_tokens=..., focus_topic=..., force=True)."""
        return self.command(("/compress " + focus).strip())

    def switch_model(self, model: str) -> Any:
        """/model X -> _handle_model_switch -> model_switch.switch_model ->
        _apply_model_switch_result -> agent.switch_model (cached prompt := None).
        NB: the next chat() sees a new route signature and builds a NEW AIAgent."""
        return self.command(f"/model {model}")

    # -- (e) automatic compaction on a turn thread ----------------------------
    def auto_compact(self, *, small_turns: int = 4) -> dict[str, Any]:
        """Grow the transcript past the compressor's threshold with one big
        user message that ends up in the compressible middle, then send a
        small turn that crosses the threshold so Hermes compacts by itself
        (on that turn's run_agent thread)."""
        from agent.model_metadata import estimate_request_tokens_rough
        while len(self.cli.conversation_history) < 2 * small_turns:
            self.turn(f"small talk {len(self.cli.conversation_history)}")
        a = self.agent
        thr = a.context_compressor.threshold_tokens
        cur = estimate_request_tokens_rough(self.cli.conversation_history,
                                            system_prompt=a._cached_system_prompt or "",
                                            tools=a.tools or None)
        gap = max(0, thr - cur)
        big_tokens = max(1000, gap - 4000)          # stays just below threshold
        self.turn("BIG " + filler(big_tokens * 4))
        for i in range(3):
            self.turn(f"small follow-up {i}")
        before = len(self.cli.conversation_history)
        mark = self.logs.mark()
        self.turn("TRIGGER " + filler(8000 * 4))     # pushes the request over threshold
        started = [r for r in self.logs.since(mark) if "context compression started" in r.msg]
        return {"threshold": thr, "baseline_tokens": cur, "big_tokens": big_tokens,
                "history_before": before + 1, "history_after": len(self.cli.conversation_history),
                "compacted": bool(started),
                "compaction_thread": started[0].thread if started else None,
                "trigger_log": [r.msg for r in self.logs.since(mark)
                                if "compression:" in r.msg and "threshold" in r.msg][:1]}

    # -- (f) automatic compaction that makes no progress ----------------------
    def auto_compact_no_progress(self) -> dict[str, Any]:
        """On a short transcript, send one user message that alone exceeds the
        threshold: Hermes auto-compacts on the turn thread, the compressor sees
        <= protect_first_n+4 messages ("Cannot compress"), returns them
        unchanged, and conversation_compression logs "Compression made no
        progress ... skipping boundary rewrite"."""
        if self.agent is None:
            self.turn("warm-up")                 # builds the agent
        thr = self.agent.context_compressor.threshold_tokens
        mark = self.logs.mark()
        self.turn("HUGE " + filler((thr + 2000) * 4))
        recs = self.logs.since(mark)
        return {"threshold": thr,
                "no_progress": [r.thread for r in recs if "Compression made no progress" in r.msg],
                "started": [r.thread for r in recs if "context compression started" in r.msg],
                "trigger_log": [r.msg for r in recs if "compression" in r.msg.lower()
                                and "threshold" in r.msg][:2]}

    # -- shutdown -------------------------------------------------------------
    def close(self) -> None:
        """What the CLI's atexit hook does: cli._run_cleanup() on the main
        thread (on_session_end + provider shutdown via shutdown_memory_provider)."""
        self._q.put(None)
        self.process_thread.join(5)
        self.climod._run_cleanup()
        if self._stdout_file:
            sys.stdout = sys.__stdout__
            self._stdout_file.close()


def filler(n_chars: int) -> str:
    base = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    return (base * (n_chars // len(base) + 1))[:n_chars]


def cli_toolsets(cli_config: dict[str, Any]) -> list[str]:
    """cli.main(): with no --toolsets, coding posture if cwd looks like a code
    workspace, else the platform toolsets for "cli" (incl. enabled plugin toolsets)."""
    try:
        from agent.coding_context import coding_selection
        coding = coding_selection(platform="cli", config=cli_config)
    except Exception:
        coding = None
    if coding is not None:
        return coding
    from hermes_cli.tools_config import _get_platform_tools
    return sorted(_get_platform_tools(cli_config, "cli"))


