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

from agentcfg.core import events
from tests.conftest import run_cli
from tests.helpers import ledger

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
        return ledger(self.root, claims=True)

    def events(self) -> list[str]:
        return [e["event"] for e in self.ledger()]


@pytest.fixture
def host(ws: Path, tmp_path: Path) -> Iterator[Host]:
    assert run_cli("hooks", "install", "--host", "claude").exit_code == 0
    assert run_cli("roadmap", "trust", "demo").exit_code == 0  # as a person does before a run
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

RESULT_429 = json.dumps(
    {"type": "result", "is_error": True, "api_error_status": 429, "error": "rate_limit",
     "result": "You've hit your 5-hour limit"}
)  # fmt: skip


@pytest.mark.parametrize(
    "printed",
    [
        f"Claude AI usage limit reached|{'9' * 5000}",
        '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":NaN}}\n'
        + RESULT_429,
    ],
    ids=["5000-digits", "resetsAt-NaN"],
)
def test_a_limit_with_a_number_out_of_range_is_a_limit_with_no_reset_told(
    host: Host, printed: str
) -> None:
    """The host ends on a limit (exit 1) telling a reset no clock can hold: the number is
    ignored, the limit waits as one with no reset told, and the run ends typed (more such
    numbers: tests/hosts/test_limits.py)."""
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
        json.dumps(
            {
                "type": "result",
                "is_error": False,
                "subtype": "success",
                "result": "You've hit your 5-hour limit · resets 9am (UTC)",
            }
        ),
    ],
    ids=["clock", "stream-json-success"],
)
def test_a_limit_line_the_model_wrote_is_not_a_limit(host: Host, printed: str) -> None:
    """A host that ends cleanly (exit 0) printed the model's reply: a usage-limit line in it
    is the model's words, never a wait (the host itself ends non-zero on a limit; more such
    lines: tests/run/test_driver.py)."""
    (host.bin / "said").write_text(printed + "\n")
    host.script('cat "$(dirname "$0")/said"\nexit 0')
    proc = host.run("--max-restarts", "1", "--max-wait", "30s")
    assert ending(proc) == ("halt-restarts", 16), proc.stderr
    assert "paused-usage-limit" not in host.events()
    resumes = [e["reason"] for e in host.ledger() if e["event"] == "run-resume"]
    assert resumes == ["cut-short"]


# --- a host that never ends is ended: at --until, at Ctrl-C, when the driver dies ---

HANGS = "sleep 300 &\nwait"  # the host and a child of its own, both waiting forever
DEAF = "trap '' INT TERM\nsleep 300 &\nwait"  # the same, deaf to SIGINT and SIGTERM


def children(pid: int) -> list[int]:
    """The processes `pid` started that still run."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if entry.name.isdigit() and fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.slow  # a kill test: it waits out the deadline
def test_until_ends_a_host_that_hangs_at_the_deadline(host: Host) -> None:
    host.script(HANGS)
    started = time.monotonic()
    proc = host.run("--until", "3s")
    took = time.monotonic() - started
    assert ending(proc) == ("halt-until", 11), proc.stderr
    # the deadline, then the host's group asked to end (it does at once): a few seconds more
    # at most, for the interpreter's start and a loaded machine
    assert 3 <= took < 10, took
    assert host.events()[-1] == "halt-until"
    assert gone(host.pids(), within=2)


@pytest.mark.slow  # a kill test: it waits out both graces
def test_until_ends_a_host_deaf_to_signals_after_a_grace(host: Host) -> None:
    host.script(DEAF)
    started = time.monotonic()
    proc = host.run("--until", "2s")
    took = time.monotonic() - started
    assert ending(proc) == ("halt-until", 11), proc.stderr
    assert took < 2 + 2 * 5 + 5, took  # SIGINT, SIGTERM each with its grace, then SIGKILL
    assert gone(host.pids(), within=2)


@pytest.mark.slow  # a kill test: it waits out the output's grace at each start
def test_a_host_that_leaves_a_process_holding_its_output_does_not_hold_the_driver(
    host: Host,
) -> None:
    """The host exits, but a process it started in a session of its own keeps the host's
    output open: the driver reads what is there and goes on, it does not wait for the end of
    the output."""
    host.script('setsid sleep 300 &\necho "$!" >> "$0.pid"\necho done\nexit 0')
    started = time.monotonic()
    proc = host.run("--max-restarts", "1")
    assert ending(proc) == ("halt-restarts", 16), proc.stderr
    assert time.monotonic() - started < 15


def test_the_host_ends_when_the_driver_is_killed(host: Host) -> None:
    host.script(HANGS)
    driver = host.start()
    host.started()
    (pid,) = host.pids()
    deadline = time.monotonic() + 10
    while not children(pid):  # the host's own child is up
        assert time.monotonic() < deadline
        time.sleep(0.05)
    family = [pid, *children(pid)]
    driver.kill()  # SIGKILL: the driver gets no word in
    driver.communicate(timeout=10)
    assert gone(family, within=5), [p for p in family if alive(p)]


def test_ctrl_c_twice_ends_a_deaf_host_at_once(host: Host) -> None:
    """The first Ctrl-C asks the host to end and gives it a grace; a second one ends it and
    everything it started at once: the run is over within a second or two of it (the margin
    is for a loaded machine), as `interrupted`, with nothing left running."""
    host.script(DEAF)
    driver = host.start()
    host.started()
    family = [host.pids()[0], *children(host.pids()[0])]
    driver.send_signal(signal.SIGINT)
    time.sleep(0.5)
    driver.send_signal(signal.SIGINT)
    second = time.monotonic()
    stdout, stderr = driver.communicate(timeout=30)
    assert time.monotonic() - second < 5, stderr
    assert driver.returncode == 130, stderr
    assert json.loads(stdout)["ending"] == "interrupted"
    assert host.events()[-1] == "interrupted"
    assert gone(family, within=2), [p for p in family if alive(p)]


@pytest.mark.slow  # a kill test: it waits out both graces
def test_ctrl_c_once_ends_a_deaf_host_within_the_grace(host: Host) -> None:
    host.script(DEAF)
    driver = host.start()
    host.started()
    family = [host.pids()[0], *children(host.pids()[0])]
    driver.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = driver.communicate(timeout=60)
    # SIGINT then SIGTERM, each with its 5 s grace, then SIGKILL: 10 s, and 5 s of margin
    assert time.monotonic() - sent < 15, stderr
    assert driver.returncode == 130 and json.loads(stdout)["ending"] == "interrupted"
    assert gone(family, within=2), [p for p in family if alive(p)]


# --- --fresh-per-step: one step per session, however fast the agent ---

FAST_AGENT = f"""
for word in "$@"; do
  case "$last" in --session-id|--resume) session=$word ;; esac
  last=$word
done
export CLAUDE_CODE_SESSION_ID="$session"
for step in 1.2 1.3; do
  {sys.executable} -m agentcfg roadmap done demo $step >> "$0.log" 2>&1
done
exit 0
"""


def test_fresh_per_step_lets_no_session_close_a_second_step(host: Host) -> None:
    """An agent that closes one step and the next in the same breath, before the driver's
    next look at the ledger: the second close is refused (the step is for a new session), so
    no session closes two steps, whatever the driver's poll."""
    host.script(FAST_AGENT)
    proc = host.run("--fresh-per-step", "--max-restarts", "1")
    assert proc.stdout, proc.stderr
    verified = [(e["run"], e["step"]) for e in host.ledger() if e["event"] == "verified"]
    assert verified and verified[0][1] == "1.2", host.events()
    steps: dict[str, set[str]] = {}
    for run, step in verified:
        steps.setdefault(run, set()).add(step)
    assert all(len(closed) == 1 for closed in steps.values()), verified  # a step per session
    assert "- [ ] **1.3**" in (host.root / "roadmaps" / "demo.md").read_text()
    said = (host.bin / "claude.log").read_text()
    assert "closes one step" in said, said


@pytest.mark.parametrize(
    ("body", "args", "told"),
    [
        (f"{sys.executable} -m agentcfg stop demo >/dev/null\nexit 0", (), events.STOPPED),
        ("exit 0", ("--max-restarts", "1"), events.HALT_RESTARTS),
    ],
    ids=["stopped", "halt-restarts"],
)
def test_the_process_exits_with_the_tables_code_for_its_ending(
    host: Host, body: str, args: tuple[str, ...], told: str
) -> None:
    """The exit status a CI job branches on is the events table's code for the ending."""
    host.script(body)
    proc = host.run(*args)
    assert ending(proc) == (told, events.EXIT_CODES[told]), proc.stderr
