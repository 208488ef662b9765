"""`agentcfg run` as a process of its own, against a scripted fake `claude` on PATH that does what
a hostile or broken host does: prints what the model wrote, hangs, ignores signals. Whatever
it does, the driver ends with a typed ending, in time, and leaves no host process behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

AGENTCFG = [sys.executable, "-m", "agentcfg"]


@dataclass
class Host:
    """The fake host's folder: its program on PATH, and what each start of it leaves behind."""

    root: Path  # the workspace
    bin: Path
    env: dict[str, str]

    def script(self, body: str) -> None:
        """The host's program: a shell script; `$0.pid` collects the pid of each start."""
        program = self.bin / "claude"
        program.write_text(f'#!/bin/sh\necho $$ >> "$0.pid"\n{body}\n')
        program.chmod(0o755)

    def pids(self) -> list[int]:
        path = self.bin / "claude.pid"
        return [int(n) for n in path.read_text().split()] if path.exists() else []

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*AGENTCFG, "run", "demo", "--host", "claude", "--json", *args],
            cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*AGENTCFG, "run", "demo", "--host", "claude", "--json", *args],
            cwd=self.root, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def started(self, count: int = 1, within: float = 30) -> None:
        """Wait until the host has been started `count` times."""
        deadline = time.monotonic() + within
        while len(self.pids()) < count:
            assert time.monotonic() < deadline, "the host never started"
            time.sleep(0.05)

    def ledger(self) -> list[dict[str, Any]]:
        path = self.root / "state" / "run-continuation.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def events(self) -> list[str]:
        return [e["event"] for e in self.ledger()]


@pytest.fixture
def host(ws: Path, tmp_path: Path) -> Iterator[Host]:
    assert run_cli("hooks", "install", "--host", "claude").exit_code == 0
    folder = tmp_path / "bin"
    folder.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "AGENTCFG_"))},
        "PATH": f"{folder}:{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),
    }
    made = Host(ws, folder, env)
    yield made
    for pid in made.pids():  # nothing a failing test started outlives it
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """The process runs (a zombie, dead but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def ending(proc: subprocess.CompletedProcess[str]) -> tuple[str, int]:
    assert proc.stdout, proc.stderr
    told = json.loads(proc.stdout)
    assert told["exit_code"] == proc.returncode, proc.stderr
    return told["ending"], proc.returncode


# --- what the host prints is read, never obeyed ---

DIGITS = {"400": "9" * 400, "5000": "9" * 5000}
RESULT_429 = json.dumps(
    {"type": "result", "is_error": True, "api_error_status": 429, "error": "rate_limit",
     "result": "You've hit your 5-hour limit"}
)  # fmt: skip


@pytest.mark.parametrize(
    "printed",
    [
        f"Claude AI usage limit reached|{DIGITS['400']}",
        f"Claude AI usage limit reached|{DIGITS['5000']}",
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1e20}}\n'
        + RESULT_429,
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":Infinity}}\n'
        + RESULT_429,
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":NaN}}\n'
        + RESULT_429,
    ],
    ids=["400-digits", "5000-digits", "resetsAt-1e20", "resetsAt-Infinity", "resetsAt-NaN"],
)
def test_a_limit_with_a_number_out_of_range_is_a_limit_with_no_reset_told(
    host: Host, printed: str
) -> None:
    """The host ends on a limit (exit 1) telling a reset no clock can hold: the number is
    ignored, the limit waits as one with no reset told, and the run ends typed."""
    (host.bin / "said").write_text(printed + "\n")
    host.script('cat "$(dirname "$0")/said"\nexit 1')
    proc = host.run("--max-restarts", "1", "--max-wait", "1s")
    assert ending(proc) == ("halt-restarts", 16), proc.stderr
    paused = [e for e in host.ledger() if e["event"] == "paused-usage-limit"]
    assert [e["reset_at"] for e in paused] == [None]
    assert host.events()[-1] == "halt-restarts"
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "printed",
    [
        "You've hit your 5-hour limit · resets 9am (UTC)",
        "Claude AI usage limit reached|1790003600",
        "API Error: Request rejected (429) · rate limited",
        f"Claude AI usage limit reached|{DIGITS['5000']}",
        json.dumps(
            {
                "type": "result",
                "is_error": False,
                "subtype": "success",
                "result": "You've hit your 5-hour limit · resets 9am (UTC)",
            }
        ),
    ],
    ids=["clock", "epoch", "429", "5000-digits", "stream-json-success"],
)
def test_a_limit_line_the_model_wrote_is_not_a_limit(host: Host, printed: str) -> None:
    """A host that ends cleanly (exit 0) printed the model's reply: a usage-limit line in it
    is the model's words, never a wait (the host itself ends non-zero on a limit)."""
    (host.bin / "said").write_text(printed + "\n")
    host.script('cat "$(dirname "$0")/said"\nexit 0')
    proc = host.run("--max-restarts", "1", "--max-wait", "30s")
    assert ending(proc) == ("halt-restarts", 16), proc.stderr
    assert "paused-usage-limit" not in host.events()
    resumes = [e["reason"] for e in host.ledger() if e["event"] == "run-resume"]
    assert resumes == ["cut-short"]
