"""How `agentcfg run` starts a host: most hosts are one process per start, built from the host's
`headless` arguments; a host that needs more around its starts (OpenCode's server) gives the
driver a runner of its own through its `runner` function.

A runner is a context manager: entered before the run's first claim, left when the run ends
however it ends (Ctrl-C included), so whatever it started is gone with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

GRACE = 5.0  # seconds a process group has to end after SIGINT, then after SIGTERM


class Runner(Protocol):
    """What the driver asks of the way a host is started."""

    def __enter__(self) -> Runner: ...
    def __exit__(self, *exc: object) -> None: ...

    def new_session(self) -> str | None:
        """The id to claim a new session by before it starts; None: the host names its own
        session, and the claim waits as a pending claim for the session that shows its token."""

    def argv(
        self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
    ) -> list[str] | None:
        """The command of one start sending `prompt` (as the host's `headless`); None: the host
        cannot do that start."""

    def settled(self, session: str | None, ended: bool) -> bool:
        """Whether a start whose process has exited is over (`ended`: the run's state already
        tells its ending); False while the host still works the session elsewhere."""

    def interrupt(self, session: str | None) -> None:
        """Stop the session's work the driver ended the start's process on (--fresh-per-step)."""

    def limit_reset(
        self, output: str, now: float, session: str | None, code: int | None
    ) -> float | None:
        """The host's `limit_reset` for the start that ended with `output` and exit status
        `code` (None: a signal ended it)."""

    def hear(self, line: bytes) -> list[Any]:
        """The host's `hear`: what one line of a start's stdout tells, as it comes."""

    def refused(self) -> tuple[str, ...]:
        """The agent's tool calls the runner itself refused since it was last asked (asks for
        approval with nobody to answer them), each named by its command."""


class Headless(Protocol):
    """What `Plain` uses of a host module: the part of `hosts.protocols.Launcher` it calls (this
    layer is below the hosts, so it names the part rather than importing the whole)."""

    @property
    def NAMES_SESSION(self) -> bool: ...

    def headless(
        self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
    ) -> list[str] | None: ...

    def limit_reset(self, output: str, now: float) -> float | None: ...

    def hear(self, line: bytes) -> list[Any]: ...


class Plain:
    """One host process per start: its exit is the start's end."""

    def __init__(self, host: Headless, binary: str) -> None:
        self.host, self.binary = host, binary

    def __enter__(self) -> Plain:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def new_session(self) -> str | None:
        return str(uuid.uuid4()) if self.host.NAMES_SESSION else None

    def argv(
        self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
    ) -> list[str] | None:
        args = self.host.headless(prompt, session, resume, extra)
        return None if args is None else [self.binary, *args]

    def settled(self, session: str | None, ended: bool) -> bool:
        return True

    def interrupt(self, session: str | None) -> None:
        return None

    def limit_reset(
        self, output: str, now: float, session: str | None, code: int | None
    ) -> float | None:
        """Only a start that failed ended on a limit: a host that exits 0 printed the model's
        reply, and a limit line in it is the model's words (it could make the run wait)."""
        return None if code == 0 else self.host.limit_reset(output, now)

    def hear(self, line: bytes) -> list[Any]:
        return self.host.hear(line)

    def refused(self) -> tuple[str, ...]:
        return ()  # a plain start answers nothing itself: its host refuses and prints it


def end_group(proc: subprocess.Popen[Any]) -> None:
    """Stop a process started in a group of its own and everything it started: SIGINT, then
    SIGTERM, then SIGKILL, each after a grace; a child still holding the group is killed.
    Interrupted meanwhile (a second Ctrl-C), it kills the group at once and lets that go on."""
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(GRACE)
            except subprocess.TimeoutExpired:
                continue
            break
    finally:
        kill_group(proc)


def kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL to the process's group, then reap it (a killed process ends at once)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(GRACE)


# The watchdog's whole program: it waits on a pipe only the driver writes to; a word on it
# means the driver ended the group itself, an end of file without one that the driver died
# (kill -9), and then it ends the group: SIGTERM, and SIGKILL once a grace has passed.
WATCHDOG = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
group, grace = int(sys.argv[1]), float(sys.argv[2])
if sys.stdin.buffer.read(1):
    sys.exit(0)
def send(sig):
    try:
        os.killpg(group, sig)
    except OSError:
        sys.exit(0)
send(signal.SIGTERM)
deadline = time.monotonic() + grace
while time.monotonic() < deadline:
    time.sleep(0.1)
    send(0)
send(signal.SIGKILL)
"""


class Watchdog:
    """Ends a process group when the driver that started it dies without ending it: a small
    process in a session of its own, watching a pipe that closes with the driver."""

    def __init__(self, group: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", WATCHDOG, str(group), str(GRACE)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip

    def release(self) -> None:
        """The driver ended the group itself: the watchdog goes without doing anything."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.write(b"x")
            self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(GRACE)
