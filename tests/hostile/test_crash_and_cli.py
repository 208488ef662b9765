"""Hook processes killed at random moments, and CLI commands fed bad input."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
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


@pytest.mark.slow
def test_hook_killed_at_random_moments(ws: Path) -> None:
    host = SimulatedHost(ws)
    host.human("go")
    host.claim("demo")
    rng = random.Random(2026)
    survived = 0
    for n in range(KILLS):
        host.reply(f"Working, reply {n}.")
        if n % 25 == 0:  # now and then the roadmap changes, so some kills land mid-parse
            roadmap = ws / "roadmaps" / "demo.md"
            roadmap.write_text(roadmap.read_text() + f"\n<!-- edit {n} -->\n")
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentcfg", "hook", "stop"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=host.env,
            cwd=ws,
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(host.payload()).encode())
        proc.stdin.close()
        # mostly kills inside the run; every twentieth one late enough to let it finish
        time.sleep(rng.uniform(0, 0.09) if n % 20 else 0.5)
        proc.send_signal(signal.SIGKILL)
        survived += proc.wait() != -signal.SIGKILL
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
