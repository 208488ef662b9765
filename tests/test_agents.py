"""Telling an agent's session from a person's terminal: variables, ancestors, a live claim."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agentcfg import agents, claims
from agentcfg.agents import Process
from agentcfg.hosts.registry import HOSTS, adapter
from agentcfg.workspace import Workspace


def tree(*processes: Process) -> agents.Reader:
    """A process table: each process by its id, nothing else."""
    table = {p.pid: p for p in processes}
    return table.get


PERSON = (
    Process(900, 1, "python3", ("python3", "-m", "agentcfg", "roadmap", "trust", "demo")),
    Process(1, 0, "systemd", ("/sbin/init",)),
)


@pytest.mark.parametrize(
    ("process", "said"),
    [
        (Process(50, 1, "claude", ("claude",)), "Claude Code (process 50: claude)"),
        (Process(50, 1, "MainThread", ("claude", "-p", "x")), "Claude Code (process 50: claude)"),
        (
            Process(50, 1, "codex", ("/usr/lib/codex/codex", "exec")),
            "Codex CLI (process 50: codex)",
        ),
        (
            Process(50, 1, "node", ("node", "/usr/lib/node_modules/@google/gemini-cli/dist/i.js")),
            "Gemini CLI (process 50: /usr/lib/node_modules/@google/gemini-cli/dist/i.js)",
        ),
        (
            Process(50, 1, "node", ("/usr/bin/node", "--no-warnings", "/usr/local/bin/qwen")),
            "Qwen Code (process 50: qwen)",
        ),
        (Process(50, 1, "opencode", ("opencode", "run")), "OpenCode (process 50: opencode)"),
        (Process(50, 1, "copilot", ("copilot", "-p", "x")), "Copilot CLI (process 50: copilot)"),
        (
            Process(50, 1, "cursor-agent", ("/home/u/.local/bin/cursor-agent",)),
            "Cursor (process 50: cursor-agent)",
        ),
    ],
    ids=[
        "claude",
        "claude by argv",
        "codex",
        "gemini script",
        "qwen script",
        "opencode",
        "copilot",
        "cursor",
    ],
)
def test_a_host_among_the_parents_is_an_agent_session(process: Process, said: str) -> None:
    shell = Process(60, process.pid, "bash", ("/bin/bash", "-c", "agentcfg roadmap trust demo"))
    read = tree(replace(PERSON[0], ppid=60), shell, process, PERSON[1])
    assert agents.agent_session({}, pid=900, read=read) == said


@pytest.mark.parametrize(
    "process",
    [
        Process(50, 1, "tmux: server", ("tmux", "new", "-s", "claude")),
        Process(50, 1, "vim", ("vim", "claude.md")),
        Process(50, 1, "node", ("node", "server.js", "claude")),
        Process(50, 1, "cursor", ("/opt/Cursor/cursor",)),
        Process(50, 1, "bash", ("-bash",)),
    ],
    ids=["tmux session named claude", "an editor", "a node server", "the Cursor editor", "bash"],
)
def test_a_person_s_terminal_is_no_agent_session(process: Process) -> None:
    read = tree(replace(PERSON[0], ppid=50), process, PERSON[1])
    assert agents.agent_session({"TERM": "xterm", "HOME": "/home/u"}, pid=900, read=read) is None


def test_every_host_s_variable_tells_its_host() -> None:
    for name in HOSTS:
        host = adapter(name)
        for variable in (*host.AGENT_ENV, *host.SESSION_ENV):
            said = agents.agent_session({variable: "1"}, pid=900, read=tree(*PERSON))
            assert said == f"{host.TITLE} (${variable} is set)"
            assert agents.agent_session({variable: ""}, pid=900, read=tree(*PERSON)) is None
    assert "CLAUDECODE" in agents.variables() and "GEMINI_CLI" in agents.variables()


def test_a_process_its_parent_left_is_still_told_by_its_session_s_first_process() -> None:
    orphan = Process(900, 1, "python3", ("python3", "-m", "agentcfg"), (880, 700))
    group = Process(880, 1, "sh", ("sh", "-c", "agentcfg roadmap trust demo &"), (880, 700))
    host = Process(700, 650, "claude", ("claude",), (700, 700))
    read = tree(orphan, group, host, Process(650, 1, "bash", ("bash",)), PERSON[1])
    assert agents.agent_session({}, pid=900, read=read) == "Claude Code (process 700: claude)"
    assert [p.pid for p in agents.lineage(900, read)] == [900, 1, 880, 700, 650]
    gone = tree(orphan, PERSON[1])  # its group and session gone with their first processes
    assert agents.agent_session({}, pid=900, read=gone) is None


def test_a_loop_or_a_vanished_parent_ends_the_walk() -> None:
    looped = tree(Process(900, 901, "python3", ()), Process(901, 900, "bash", ()))
    assert [p.pid for p in agents.ancestry(900, looped)] == [900, 901]
    assert [p.pid for p in agents.ancestry(900, tree(PERSON[0]))] == [900]


def test_a_live_claim_of_the_shell_s_session_is_an_agent_session(ws: Path) -> None:
    root = Workspace(ws)
    claims.claim(root, "s1", "demo", now=1.0)
    env = {"AGENTCFG_SESSION_ID": "s1"}
    said = agents.agent_session(env, pid=900, ws=root, read=tree(*PERSON))
    assert said == "session s1, which holds the claim on `demo`"
    assert agents.agent_session({"AGENTCFG_SESSION_ID": "s2"}, 900, root, tree(*PERSON)) is None
    (ws / "roadmaps" / "demo.md").unlink()  # a stale claim is no longer live
    assert agents.agent_session(env, pid=900, ws=root, read=tree(*PERSON)) is None


def test_proc_is_read_as_the_kernel_writes_it(tmp_path: Path) -> None:
    folder = tmp_path / "proc" / "77"
    folder.mkdir(parents=True)
    (folder / "stat").write_bytes(b"77 (a (b) c) S 12 77 77 0 -1 4194560 0 0\n")
    (folder / "cmdline").write_bytes(b"node\0/x/@openai/codex/bin/codex.js\0exec\0")
    found = agents.from_proc(77, tmp_path / "proc")
    argv = ("node", "/x/@openai/codex/bin/codex.js", "exec")
    assert found == Process(77, 12, "a (b) c", argv, (77, 77))
    assert agents.from_proc(78, tmp_path / "proc") is None
    (folder / "stat").write_bytes(b"garbage")
    assert agents.from_proc(77, tmp_path / "proc") is None


def test_this_process_reads_the_same_from_proc_and_from_ps() -> None:
    if not Path("/proc/self/stat").exists():
        pytest.skip("no /proc here")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        from_proc, from_ps = agents.from_proc(child.pid), agents.from_ps(child.pid)
    finally:
        child.kill()
        child.wait()
    assert from_proc is not None and from_ps is not None
    assert (from_ps.ppid, from_ps.comm) == (from_proc.ppid, from_proc.comm)
    assert from_ps.leaders[0] == from_proc.leaders[0]  # its process group
    assert from_ps.ppid == os.getpid() and from_ps.argv[-1] == "time.sleep(30)"
