"""Hook processes killed at random moments, and CLI commands fed bad input."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testing.simhost import SimulatedHost
from tests.conftest import hook_env, run_cli
from tests.hostile.harness import tree

KILLS = 200


def state_is_sound(root: Path) -> None:
    for path in (root / "state").rglob("*.json"):
        json.loads(path.read_bytes())  # every state file left is whole
    ledger = root / "state" / "run-continuation.jsonl"
    if ledger.exists():
        lines = ledger.read_bytes().split(b"\n")
        for line in lines[:-1]:  # a killed append may only ever lack its last line
            json.loads(line)


# a stop hook that kills itself at its `limit`-th file operation (an audit event: opening,
# renaming, removing, locking a file); `count` instead writes a byte for each one to `tell`
KILLER = """
import os, signal, sys
how, limit, tell = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seen = [0]
EVENTS = {"open", "os.rename", "os.replace", "os.remove", "os.unlink", "os.mkdir",
          "os.truncate", "os.chmod", "fcntl.flock", "fcntl.lockf"}
def hook(event, args):
    if event in EVENTS:
        seen[0] += 1
        if how == "count":
            os.write(tell, b".")
        elif seen[0] >= limit:
            os.kill(os.getpid(), signal.SIGKILL)
sys.addaudithook(hook)
sys.argv[1:] = ["hook", "stop"]
from agentcfg.entry import main
sys.exit(main())
"""


def fire_until(host: SimulatedHost, root: Path, limit: int, count: bool = False) -> int:
    """One fire that kills itself at its `limit`-th file operation: its exit status (or, to
    `count`, the number of file operations a whole fire makes)."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLER, "count" if count else "kill", str(limit), str(write)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=host.env,
        cwd=root,
        pass_fds=(write,),
    )
    os.close(write)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(host.payload()).encode())
    proc.stdin.close()
    seen = b""
    while chunk := os.read(read, 65536):
        seen += chunk
    os.close(read)
    code = proc.wait()
    return len(seen) if count else code


@pytest.mark.slow
def test_hook_killed_at_random_moments(ws: Path) -> None:
    """Fires killed at file operations a seeded draw picks, mostly inside the run, every
    twentieth after it: whatever was torn, the state left is whole."""
    host = SimulatedHost(ws)
    host.human("go")
    host.claim("demo")
    host.reply("Counting.")
    whole = fire_until(host, ws, 0, count=True)  # the file operations of one whole fire
    assert whole > 0
    host.claim("demo")
    rng = random.Random(2026)
    survived = 0
    for n in range(KILLS):
        host.reply(f"Working, reply {n}.")
        if n % 25 == 0:  # now and then the roadmap changes, so some kills land mid-parse
            roadmap = ws / "roadmaps" / "demo.md"
            roadmap.write_text(roadmap.read_text() + f"\n<!-- edit {n} -->\n")
        limit = rng.randint(1, whole) if n % 20 else 10 * whole
        survived += fire_until(host, ws, limit) != -signal.SIGKILL
        state_is_sound(ws)
        if n % 20 == 19:  # a run halts after a few engagements: start afresh now and then
            host.claim("demo")
    host.reply("And now a fire that is left alone.")
    result = host.fire()
    assert result.exit_code in (0, 2)
    assert result.exit_code == 0 or result.stderr.startswith(
        ("run-continuation:", "turn-end-gate:")
    )
    state_is_sound(ws)
    assert 0 < survived < KILLS, f"{survived} of {KILLS} runs finished before their kill"


CLI_CASES = [
    ["sessions", "claim", "../demo", "--session", "s"],
    ["sessions", "claim", "demo/../../x", "--session", "s"],
    ["sessions", "claim", "missing", "--session", "s"],
    ["sessions", "claim", "demo"],
    ["sessions", "claim", "demo", "--session", "s", "--max-iterations", "many"],
    ["sessions", "claim", "demo", "--session", "s", "--wall-clock", "forever"],
    ["sessions", "claim", "demo", "--session", "s", "--max-iterations", "-3"],
    ["sessions", "release"],
    ["sessions", "show"],
    ["sessions", "frobnicate"],
    ["roadmap", "status", "binary"],
    ["roadmap", "status", "latin1"],
    ["roadmap", "status", "\x1b[31mred"],
    ["roadmap", "next", "a/b"],
    ["roadmap", "lint", "missing"],
    ["roadmap", "status"],
    ["hook", "stop", "--host", "emacs"],
    ["no-such-command"],
]


@pytest.mark.parametrize("args", CLI_CASES, ids=[" ".join(a) for a in CLI_CASES])
def test_bad_cli_input_gives_one_line_and_changes_nothing(ws: Path, args: list[str]) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "keeper").exit_code == 0
    (ws / "roadmaps" / "binary.md").write_bytes(b"\x00\x01")
    (ws / "roadmaps" / "latin1.md").write_bytes(b"caf\xe9")
    before = tree(ws, skip="")
    proc = subprocess.run(
        [sys.executable, "-m", "agentcfg", *args],
        capture_output=True,
        text=True,
        env=hook_env(ws),
        cwd=ws,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert proc.returncode in (1, 2), proc
    assert "Traceback" not in proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if "rror" in line]
    assert len(error_lines) == 1, proc.stderr
    assert tree(ws, skip="") == before
