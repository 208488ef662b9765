"""Whose shell a command runs in: an agent's session, or a person's own terminal.

Commands only a person may run (`roadmap trust`, a fresh `agentcfg run`) and claims that must
not start a run afresh ask here. An agent can clear or set any variable of its shell, so three
things are looked at and any one is enough: the variables a host sets in its agent's shell,
a host's process among the command's ancestors, and a live claim held by the session the
environment names.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcfg import claims
from agentcfg.errors import AgentcfgError, ClaimError
from agentcfg.hosts.registry import HOSTS, adapter, session_env
from agentcfg.workspace import Workspace

PROC = Path("/proc")
ANCESTRY_LIMIT = 256  # parents looked at: a loop or a deep tree ends the walk, never the command
COMM_LIMIT = 15  # the kernel keeps this many characters of a process's name
# a host shipped as a script runs under one of these: its script names the host
INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno"})


@dataclass(frozen=True)
class Process:
    pid: int
    ppid: int
    comm: str  # the name the kernel keeps (at most COMM_LIMIT characters)
    argv: tuple[str, ...]
    leaders: tuple[int, ...] = ()  # its process group's and its session's first processes


Reader = Callable[[int], "Process | None"]


def agent_session(
    env: Mapping[str, str],
    pid: int | None = None,
    ws: Workspace | None = None,
    read: Reader | None = None,
) -> str | None:
    """Why the command runs inside an agent's session (e.g. "Claude Code (process 1234:
    claude)"), or None in a person's terminal. `pid` is where the walk up the process tree
    starts (this process by default); `read` reads one process (from /proc where there is
    one, else from `ps`); `ws` lets a live claim of the environment's session count.

    A process its parent left (`(cmd &)`, `nohup`) has init for a parent: the walk goes on
    from the first process of its process group and of its session, while they live. One that
    also left its session (`setsid`) is beyond telling here: only a sandbox keeps such an
    agent out of what is the person's."""
    return (
        by_env(env)
        or by_process(lineage(os.getpid() if pid is None else pid, read or reader()))
        or by_claim(env, ws)
    )


def lineage(pid: int, read: Reader) -> Iterator[Process]:
    """The ancestry of `pid`, then that of its group's and its session's leaders (each
    process once)."""
    seen: set[int] = set()
    starts = [pid]
    while starts:
        for process in ancestry(starts.pop(0), read):
            if process.pid in seen:
                break
            seen.add(process.pid)
            if process.pid == pid:
                starts += [leader for leader in process.leaders if leader > 0]
            yield process


def by_env(env: Mapping[str, str]) -> str | None:
    """The first host whose agent-shell variable is set (to anything but nothing)."""
    for name in HOSTS:
        host = adapter(name)
        for variable in (*host.AGENT_ENV, *host.SESSION_ENV):
            if env.get(variable):
                return f"{host.TITLE} (${variable} is set)"
    return None


def by_process(processes: Iterator[Process]) -> str | None:
    """The first process, nearest first, that is an agent host's."""
    for process in processes:
        found = host_of(process)
        if found is not None:
            return f"{found[0]} (process {process.pid}: {found[1]})"
    return None


def by_claim(env: Mapping[str, str], ws: Workspace | None) -> str | None:
    """The environment names a session that holds a live claim in the workspace."""
    session = claims.find_session(None, env, session_env())
    if ws is None or session is None:
        return None
    try:
        claims.check_session(session)
        held = claims.read_claim(ws, claims.session_key(session))
        if held is None or claims.is_stale(ws, held):
            return None
    except AgentcfgError:
        return None
    return f"session {session}, which holds the claim on `{held.slug}`"


def host_of(process: Process) -> tuple[str, str] | None:
    """The title of the host this process is, and the name or path it goes by: its name, its
    program's, or the script an interpreter runs; None for any other process."""
    program = process.argv[0] if process.argv else ""
    names = [process.comm, os.path.basename(program)]
    paths = [program]
    if INTERPRETERS.intersection(names):
        script = next((arg for arg in process.argv[1:] if not arg.startswith("-")), "")
        names.append(os.path.basename(script))
        paths.append(script)
    for host in map(adapter, HOSTS):
        for known in host.PROGRAMS:
            if "/" in known:
                path = next((path for path in paths if known in path), None)
                if path is not None:
                    return host.TITLE, path
            elif known in names or known[:COMM_LIMIT] == process.comm:
                return host.TITLE, known
    return None


def ancestry(pid: int, read: Reader) -> Iterator[Process]:
    """The process `pid`, then each parent up to the first (pid 1), as far as they can be read."""
    seen: set[int] = set()
    while pid > 0 and pid not in seen and len(seen) < ANCESTRY_LIMIT:
        seen.add(pid)
        found = read(pid)
        if found is None:
            return
        yield found
        pid = found.ppid


def reader(proc: Path = PROC) -> Reader:
    """How a process is read here: from `proc` where the system has one, else from `ps`."""
    if (proc / "self" / "stat").exists():
        return lambda pid: from_proc(pid, proc)
    return from_ps


def from_proc(pid: int, proc: Path = PROC) -> Process | None:
    """A process from /proc/<pid>/stat and cmdline; None once it is gone or unreadable."""
    try:
        stat = (proc / str(pid) / "stat").read_bytes().decode("utf-8", "replace")
        cmdline = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    left, right = stat.find("("), stat.rfind(")")  # the name may hold spaces and parentheses
    fields = stat[right + 1 :].split()
    if left < 0 or right < left or len(fields) < 4 or not all(f.isdigit() for f in fields[1:4]):
        return None
    argv = tuple(part.decode("utf-8", "replace") for part in cmdline.split(b"\0") if part)
    leaders = (int(fields[2]), int(fields[3]))  # its process group, its session
    return Process(pid, int(fields[1]), stat[left + 1 : right], argv, leaders)


def from_ps(pid: int) -> Process | None:
    """A process as `ps` tells it, where there is no /proc (its arguments split at spaces)."""
    try:
        head = _ps("-o", "ppid=", "-o", "pgid=", "-o", "ucomm=", "-p", str(pid)).split(None, 2)
        args = _ps("-ww", "-o", "args=", "-p", str(pid)).split()
    except (OSError, subprocess.SubprocessError):
        return None
    if len(head) < 2 or not (head[0].isdigit() and head[1].isdigit()):
        return None
    comm = head[2].strip() if len(head) > 2 else ""
    return Process(pid, int(head[0]), comm, tuple(args), (int(head[1]),))


def _ps(*args: str) -> str:
    return subprocess.run(
        ["ps", *args],
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=10,
        check=False,
    ).stdout


def require_person(command: str, why: str | None) -> None:
    """ClaimError naming why, when a command only a person may run runs in an agent's session."""
    if why is not None:
        raise ClaimError(
            f"`{command}` is for a person, and this runs inside an agent's session: {why}; "
            "run it from your own terminal"
        )


def variables() -> tuple[str, ...]:
    """Every variable some host sets in its agent's shell."""
    return tuple(
        variable
        for name in HOSTS
        for variable in (*adapter(name).AGENT_ENV, *adapter(name).SESSION_ENV)
    )
