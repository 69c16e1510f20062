"""`persona ui` as a user runs it: a real process on a free loopback port, and plain HTTP requests to it."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

REPO = Path(__file__).resolve().parents[2]
STARTUP_S = 30  # a bound for a loaded machine, not a measure: the server normally answers in under a second


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str


@dataclass
class Running:
    """A started `persona ui`: its address and key, and what it wrote to stdout and stderr (files we keep)."""

    process: subprocess.Popen[bytes]
    url: str
    out: Path
    err: Path

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 0)

    @property
    def authority(self) -> str:
        """The host and port the printed address names: what a browser sends as Host."""
        return urlsplit(self.url).netloc

    @property
    def token(self) -> str:
        return urlsplit(self.url).query.removeprefix("token=")

    def request(self, method: str, path: str, *, host: str | None = None, cookie: str | None = None,
                headers: dict[str, str] | None = None, body: str | None = None) -> Answer:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=STARTUP_S)
        sent = {"Host": host or self.authority, **({"Cookie": cookie} if cookie else {}), **(headers or {})}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=sent)
        answer = conn.getresponse()
        found = Answer(answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read().decode())
        conn.close()
        return found

    def login(self) -> str:
        """The cookie the first visit (with the token in the URL) sets."""
        answer = self.request("GET", f"/?token={self.token}")
        assert answer.status == 303, answer
        cookie = SimpleCookie(answer.headers["set-cookie"])
        name = f"persona_ui_{self.port}"
        return f"{name}={cookie[name].value}"

    def get(self, path: str, cookie: str) -> Answer:
        return self.request("GET", path, cookie=cookie)

    def csrf(self, cookie: str) -> str:
        match = re.search(r'name="csrf" value="([^"]+)"', self.get("/", cookie).body)
        assert match, "every page carries the CSRF token in its forms"
        return match.group(1)

    def post(self, path: str, cookie: str, form: dict[str, Any], *, origin: str | None = "same") -> Answer:
        headers = {"Origin": f"http://{self.authority}"} if origin == "same" else \
            ({"Origin": origin} if origin else {})
        return self.request("POST", path, cookie=cookie, headers=headers, body=urlencode(form))

    def follow(self, answer: Answer, cookie: str) -> Answer:
        """The page a POST's redirect leads to (where its note is shown)."""
        assert answer.status == 303, answer
        return self.get(answer.headers["location"], cookie)

    def stop(self) -> int:
        """Ctrl-C, as a user stops it; its exit status."""
        self.process.send_signal(signal.SIGINT)
        return self.process.wait(timeout=STARTUP_S)


def config_file(tmp_path: Path, overrides: dict[str, Any]) -> Path:
    """Dotted overrides as a config file (JSON is YAML), so the server process reads exactly these settings."""
    nested: dict[str, Any] = {}
    for key, value in overrides.items():
        *parents, last = key.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = str(value) if isinstance(value, Path) else value
    path = tmp_path / "ui-config.yaml"
    path.write_text(json.dumps(nested))
    return path


QUIET = ("--no-browser", "--port", "0")


def start(tmp_path: Path, config: Path, *args: str, flags: tuple[str, ...] = QUIET,
          env: dict[str, str] | None = None) -> Running:
    """`persona -c CONFIG ui FLAGS ARGS` with a clean environment (and ``env``) and HOME in ``tmp_path``; its
    first line names the address."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    out, err = tmp_path / "ui.out", tmp_path / "ui.err"
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "PYTHONPATH": str(REPO), **(env or {})}
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "pipeline", "-c", str(config), "ui", *flags, *args],
                                   env=env, stdout=stdout, stderr=stderr, cwd=tmp_path)
    url = _address(process, out, err)
    return Running(process, url, out, err)


def _address(process: subprocess.Popen[bytes], out: Path, err: Path) -> str:
    import time

    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        match = re.search(r"http://[a-z0-9-]+\.localhost:\d+/\?token=[\w-]+", out.read_text())
        if match:
            return match.group(0)
        if process.poll() is not None:
            raise AssertionError(f"persona ui exited {process.returncode}: {err.read_text()}")
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"persona ui printed no address: {err.read_text()}")
