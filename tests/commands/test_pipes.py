"""A command whose reader closes the pipe early (`agentcfg report | head -1`) ends quietly:
no traceback, no error line, no error log, and the exit a shell gives a writer ended by SIGPIPE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import hook_env, run_cli, write_roadmap

COMMANDS = [
    ("report",),
    ("roadmap", "status", "demo"),
    ("sessions", "list"),
    ("roadmap", "list", "--json"),
    ("report", "--json"),
    ("run", "--help"),
    ("--help",),
]


def into_closed_pipe(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`agentcfg ARGS` with its stdout a pipe whose reader closed it before reading a byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "agentcfg", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            env=hook_env(root, XDG_STATE_HOME=str(root.parent / "xdg")),
            cwd=root,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_pipe_ends_the_command_quietly_with_exit_141(
    ws: Path, args: tuple[str, ...]
) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1")  # a claim and a ledger to show
    ended = into_closed_pipe(ws, *args)
    assert (ended.returncode, ended.stderr) == (141, "")
    assert not (ws.parent / "xdg" / "agentcfg" / "error.log").exists()  # nothing went wrong


def test_head_reading_one_line_of_a_long_output_stops_it_quietly(ws: Path) -> None:
    """A real reader: `head -1` takes the first line of more output than a pipe holds."""
    phases = "".join(f"## Phase {n} — a phase with a longer title\n- [ ] s\n" for n in range(3000))
    write_roadmap(ws, "long", phases)
    env = hook_env(ws, XDG_STATE_HOME=str(ws.parent / "xdg"))
    writer = subprocess.Popen(
        [sys.executable, "-m", "agentcfg", "roadmap", "status", "long"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ws,
    )
    assert writer.stdout is not None and writer.stderr is not None
    head = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, check=False)
    writer.stdout.close()
    stderr = writer.stderr.read().decode()
    writer.stderr.close()
    assert (head.stdout, writer.wait(timeout=60), stderr) == (
        b"roadmap `long` (autonomous)\n",
        141,
        "",
    )
