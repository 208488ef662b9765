"""Verify-gated progress: run a step's verify line, keep the proof, flip exactly its box."""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agentcfg import roadmaps, state
from agentcfg.errors import AgentcfgError, ClaimError, RoadmapError
from agentcfg.roadmap import Roadmap, Step
from agentcfg.workspace import Workspace

TAIL_LINES = 40
_BOX = re.compile(rb"^((?:\xef\xbb\xbf)?[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])[ \t]+)\[ \]")


class StepError(AgentcfgError):
    """A step cannot be found, verified or marked."""


@dataclass(frozen=True)
class VerifyResult:
    step: str
    command: str
    exit_code: int | None  # None when it ran out of time
    duration: float
    tail: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def find_step(roadmap: Roadmap, query: str) -> Step:
    """A step by its id, else by a unique prefix of its text (case-insensitive)."""
    for step in roadmap.steps:
        if step.id == query:
            return step
    wanted = query.strip().casefold()
    matches = [s for s in roadmap.steps if wanted and s.text.casefold().startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StepError(f"no step `{query}`: give a step id or the start of its text")
    ids = ", ".join(s.id for s in matches[:8])
    raise StepError(
        f"`{query}` matches {len(matches)} steps ({ids}); give more of the text or the id"
    )


def check_markable(step: Step) -> None:
    if step.mark != "open":
        raise StepError(f"step {step.id} is {step.mark}, not open")
    if step.blocked:
        raise StepError(f"step {step.id} is blocked-by {step.blocked_by or '(no id)'}")


def run(
    step: Step,
    cwd: Path,
    timeout: float,
    echo: Callable[[str], None] | None = None,
) -> VerifyResult:
    """Run the step's verify line in a shell from `cwd`, streaming each line to `echo`."""
    if not step.verify:
        raise StepError(f"step {step.id} has no verify line")
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    started = time.monotonic()
    proc = subprocess.Popen(
        step.verify,
        shell=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # so a timeout can end the command and all it started
    )
    assert proc.stdout is not None
    timer = _Timer(proc, timeout)
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            tail.append(line)
            if echo is not None:
                echo(line)
        code = proc.wait()
    finally:
        timer.cancel()
    duration = time.monotonic() - started
    return VerifyResult(step.id, step.verify, None if timer.fired else code, duration, tuple(tail))


class _Timer:
    """Ends a process group after `seconds`; remembers whether it had to."""

    def __init__(self, proc: subprocess.Popen[bytes], seconds: float) -> None:
        self.fired = False
        self._proc = proc
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.fired = True
        with contextlib.suppress(OSError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def cancel(self) -> None:
        self._timer.cancel()


def log(
    ws: Workspace,
    event: str,
    slug: str,
    roadmap: Roadmap,
    env: Mapping[str, str],
    now: float,
    **fields: object,
) -> None:
    """A ledger event from the command line, tied to this session's run when it has one."""
    from agentcfg.claims import resolve_session, session_key
    from agentcfg.roadmap import scan

    try:
        run: str | None = session_key(resolve_session(None, env))
    except ClaimError:
        run = None
    counts = scan(roadmap).counts
    record = state.event(event, now, run, slug, open=counts.open, blocked=counts.blocked, **fields)
    state.append_ledger(ws.state, record)


def mark_done(ws: Workspace, slug: str, step_id: str) -> Step:
    """Flip exactly this step's `[ ]` to `[x]`; every other byte of the file stays as it was."""
    path = ws.roadmap_path(slug)
    with state.locked(ws.state / "locks" / f"roadmap-{slug}.lock"):
        data = path.read_bytes()
        current = roadmaps.parse_bytes(ws, data, path)
        step = next((s for s in current.steps if s.id == step_id), None)
        if step is None:
            raise StepError(f"step {step_id} is no longer in roadmap `{slug}`")
        check_markable(step)
        lines = data.split(b"\n")
        index = step.line - 1
        flipped, count = _BOX.subn(rb"\1[x]", lines[index], count=1)
        if count != 1:
            raise RoadmapError(f"cannot find the checkbox of step {step_id} on line {step.line}")
        lines[index] = flipped
        mode = path.stat().st_mode & 0o7777
        state.write_bytes(path.resolve(), b"\n".join(lines), mode=mode, private_dir=False)
    roadmaps.load(ws, slug)  # refresh the parse cache
    return step
