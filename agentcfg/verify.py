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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcfg import loading, state, trust
from agentcfg.core.roadmap import Roadmap, Step
from agentcfg.errors import ClaimError, RoadmapError, StepError
from agentcfg.paths import LOCKS
from agentcfg.workspace import Workspace

TAIL_LINES = 40
OUTPUT_GRACE = 1.0  # seconds to read what a finished command wrote last
# Any one-character mark (UTF-8): `[/]`, a remapped or unknown mark are open steps too.
_BOX = re.compile(
    rb"^((?:\xef\xbb\xbf)?[ \t]*(?:>[ \t]*)*(?:[-*+]|\d{1,9}[.)])[ \t]+)"
    rb"\[(?:[^\][\\\n\t\x80-\xff]|[\xc0-\xff][\x80-\xbf]{1,3})\]"
)
# the parser's line model: CRLF, a lone CR and LF each end a line
_LINE_END = re.compile(rb"\r\n|\r|\n")


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
    """A step by its label or id, else by a unique prefix of its text (all case-insensitive).

    A label wins over an equal id of another step: the parser keeps a label only where the
    step it hides still has a label of its own.
    """
    wanted = query.strip().casefold()
    for attribute in ("label", "id"):
        for step in roadmap.steps:
            if wanted and getattr(step, attribute).casefold() == wanted:
                return step
    matches = [s for s in roadmap.steps if wanted and s.text.casefold().startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise StepError(f"no step `{query}`: give a step id or label, or the start of its text")
    ids = ", ".join(s.name for s in matches[:8])
    raise StepError(
        f"`{query}` matches {len(matches)} steps ({ids}); give more of the text or the id"
    )


def require_verify(step: Step, hint: str = "") -> str:
    """The step's verify line; StepError when it has none."""
    if not step.verify:
        raise StepError(f"step {step.name} has no verify line" + (f"; {hint}" if hint else ""))
    return step.verify


def check_markable(step: Step) -> None:
    if step.mark != "open":
        raise StepError(f"step {step.name} is {step.mark}, not open")
    if step.blocked:
        raise StepError(f"step {step.name} is blocked-by {step.blocked_by or '(no id)'}")


def run(
    step: Step,
    cwd: Path,
    timeout: float,
    echo: Callable[[str], None] | None = None,
) -> VerifyResult:
    """Run the step's verify line in a shell from `cwd`, streaming each line to `echo`."""
    command = require_verify(step)
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # so a timeout can end the command and all it started
    )
    held = threading.Lock()

    def read() -> None:
        for raw in proc.stdout or ():
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with held:
                tail.append(line)
            if echo is not None:
                echo(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        code = None
    with contextlib.suppress(OSError):  # the command's group: on a timeout, or what it left
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # a child that left the group may still hold the output open: it is not waited for
    reader.join(OUTPUT_GRACE)
    duration = time.monotonic() - started
    with held:
        return VerifyResult(step.id, command, code, duration, tuple(tail))


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
    from agentcfg.core.roadmap import scan
    from agentcfg.hosts.registry import session_env

    try:
        run: str | None = session_key(resolve_session(None, env, session_env()))
    except ClaimError:
        run = None
    counts = scan(roadmap).counts
    record = state.event(event, now, run, slug, open=counts.open, blocked=counts.blocked, **fields)
    state.append_ledger(ws.state, record)


def mark_done(ws: Workspace, slug: str, step_id: str, proven: str | None = None) -> Step:
    """Flip exactly this step's box to `[x]`; every other byte of the file stays as it was.

    `proven`: the verify line that passed; the box is ticked only while it is still the
    step's verify line (checked under the roadmap's lock).
    """
    slug = ws.canonical(slug)
    path = ws.roadmap_path(slug)
    with state.locked(ws.state / LOCKS / f"roadmap-{slug}.lock"):
        data = path.read_bytes()
        current = loading.parse_bytes(ws, data, path)
        step = next((s for s in current.steps if s.id == step_id), None)
        if step is None:
            raise StepError(f"step {step_id} is no longer in roadmap `{slug}`")
        check_markable(step)
        if proven is not None and step.verify != proven:
            raise StepError(
                f"the verify line of step {step.name} changed while it ran; the box stays open: "
                f"run `agentcfg roadmap done {slug} {step.name}` again"
            )
        start, end = line_span(data, step.line)
        flipped, count = _BOX.subn(rb"\1[x]", data[start:end], count=1)
        if count != 1:
            raise RoadmapError(f"cannot find the checkbox of step {step_id} on line {step.line}")
        mode = path.stat().st_mode & 0o7777
        state.write_bytes(
            path.resolve(), data[:start] + flipped + data[end:], mode=mode, private_dir=False
        )
    loading.load(ws, slug)  # refresh the parse cache
    return step


def line_span(data: bytes, number: int) -> tuple[int, int]:
    """Where line `number` (1-based, as the parser counts) starts and ends, its ending left out;
    an empty span past the last line."""
    start = 0
    for _ in range(number - 1):
        found = _LINE_END.search(data, start)
        if found is None:
            return len(data), len(data)
        start = found.end()
    found = _LINE_END.search(data, start)
    return start, found.start() if found else len(data)


Echo = Callable[[str], None]


def prove(
    ws: Workspace,
    slug: str,
    roadmap: Roadmap,
    step: Step,
    env: Mapping[str, str],
    echo: Echo | None = None,
) -> VerifyResult:
    """Run one step's verify line; record the `verified` event and, when it passes, the proof."""
    from agentcfg import proofs
    from agentcfg.config import load_config

    result = run(step, ws.root, load_config(ws, env).verify_timeout, echo)
    moment = time.time()
    log(
        ws, "verified", slug, roadmap, env, moment,
        step=step.id, exit_code=result.exit_code, duration=round(result.duration, 3),
        passed=result.passed,
    )  # fmt: skip
    if result.passed:
        proofs.record(ws, slug, step.id, result.command, moment)
    return result


def verify_steps(
    ws: Workspace,
    slug: str,
    queries: Sequence[str],
    env: Mapping[str, str],
    echo: Callable[[Step], Echo | None] = lambda step: None,
) -> list[VerifyResult]:
    """`roadmap verify`: the named steps (done ones too), else every open step with a line."""
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    if queries:
        chosen = [find_step(roadmap, query) for query in queries]
        for step in chosen:
            require_verify(step)
    else:
        chosen = [s for s in roadmap.steps if s.is_open and s.verify]
    trust.require(ws, slug, chosen, env)
    return [prove(ws, slug, roadmap, step, env, echo(step)) for step in chosen]


@dataclass(frozen=True)
class Done:
    """What `roadmap done` did: the step, its verify run, and whether the box was ticked."""

    step: Step
    result: VerifyResult | None  # None with --no-verify
    marked: bool


def done(
    ws: Workspace, slug: str, query: str, env: Mapping[str, str], no_verify: bool = False
) -> Done:
    """`roadmap done`: run the step's verify line; when it passes, tick exactly its box.

    A failing verify line leaves the box open (`marked` False).
    """
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    step = find_step(roadmap, query)
    check_markable(step)
    result = None
    if not no_verify:
        require_verify(step, "pass --no-verify to mark it anyway")
        trust.require(ws, slug, [step], env)
        result = prove(ws, slug, roadmap, step, env)
        if not result.passed:
            return Done(step, result, marked=False)
    mark_done(ws, slug, step.id, None if result is None else result.command)
    log(
        ws, "marked-done", slug, loading.load(ws, slug), env, time.time(),
        step=step.id, verified=not no_verify,
    )  # fmt: skip
    return Done(step, result, marked=True)


def trust_notify(ws: Workspace, env: Mapping[str, str], now: float) -> tuple[str, ...]:
    """`roadmap trust` trusts the workspace's notify command too; the command (or nothing)."""
    from agentcfg.config import load_config

    command = load_config(ws, env).notify
    if command:
        trust.record_notify(ws, command, env, now)
    return command


def trust_roadmap(
    ws: Workspace, slug: str, env: Mapping[str, str], now: float
) -> tuple[str, list[Step], Path]:
    """`roadmap trust`: record every verify line of the roadmap as trusted by this person.

    Returns the roadmap's slug, its steps that have a verify line, and the store's path.
    """
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    steps = [step for step in roadmap.steps if step.verify]
    store = trust.record(ws, slug, steps, env, now)
    log(ws, "trusted", slug, roadmap, env, now, steps=[step.id for step in steps])
    return slug, steps, store
