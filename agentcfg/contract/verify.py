"""Verify-gated progress: run a step's verify line, keep the proof, flip exactly its box."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import loading, state
from agentcfg.contract import evidence, guard, trust
from agentcfg.core import events
from agentcfg.core.evidence import EXPLAINED
from agentcfg.core.roadmap import Roadmap, Step
from agentcfg.core.suggest import did_you_mean
from agentcfg.core.times import iso_ms, wall_clock
from agentcfg.errors import CheckChangedError, ClaimError, RoadmapError, StepError
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
    output: str = ""  # sha256 of everything it printed
    evidence: str = ""  # what its pass shows about the work (core/evidence.py); "" on a fail

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "command": self.command,
            "exit_code": self.exit_code,
            "passed": self.passed,
            "timed_out": self.exit_code is None,
            "duration": round(self.duration, 3),
            "evidence": self.evidence or None,
        }


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
        names = [name for s in roadmap.steps for name in dict.fromkeys((s.name, s.id))]
        raise StepError(
            f"no step `{query}`: give a step id or label, or the start of its text"
            + did_you_mean(query.strip(), names)
        )
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
    printed = hashlib.sha256()
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
            printed.update(raw)
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
        return VerifyResult(step.id, command, code, duration, tuple(tail), printed.hexdigest())


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
    from agentcfg.core.roadmap import scan

    counts = scan(roadmap).counts
    record = state.event(
        event, now, run_key(env), slug, open=counts.open, blocked=counts.blocked, **fields
    )
    state.append_ledger(ws.state, record)


def closed_in_session(ws: Workspace, slug: str, env: Mapping[str, str]) -> str | None:
    """Under `run --fresh-per-step` a session works one step: the step the shell's session has
    already proven on the roadmap when the driver started it so (its `run-start` or
    `run-resume` says `one_step`); None otherwise, or when the shell names no session."""
    from agentcfg.claims import find_session, session_key
    from agentcfg.hosts.registry import session_env

    session = find_session(None, env, session_env())
    if session is None:
        return None
    key = session_key(session)
    one_step, closed = False, None
    for line in state.ledger_lines(ws.state):
        if key.encode() not in line:
            continue
        with contextlib.suppress(ValueError):
            event = state.loads(line)
            if not isinstance(event, dict) or event.get("run") != key:
                continue
            name = event.get("event")
            if name in (events.RUN_START, events.RUN_RESUME) and event.get("one_step"):
                one_step = True
            step = event.get("step")
            if name == events.VERIFIED and event.get("slug") == slug and closed is None:
                closed = step if isinstance(step, str) else None
    return closed if one_step else None


def run_key(env: Mapping[str, str]) -> str | None:
    """The key of the run of the session this shell belongs to, if it names one."""
    from agentcfg.claims import resolve_session, session_key
    from agentcfg.hosts.registry import session_env

    try:
        return session_key(resolve_session(None, env, session_env()))
    except ClaimError:
        return None


def mark_done(ws: Workspace, slug: str, step_id: str, proven: str | None = None) -> Step:
    """Flip exactly this step's box to `[x]`; every other byte of the file stays as it was.

    `proven`: the verify line that passed; the box is ticked only while it is still the
    step's verify line (checked under the roadmap's lock).
    """

    def check(step: Step) -> None:
        check_markable(step)
        if proven is not None and step.verify != proven:
            raise StepError(
                f"the verify line of step {step.name} changed while it ran; the box stays open: "
                f"run `agentcfg roadmap done {slug} {step.name}` again"
            )

    return _flip(ws, slug, step_id, b"x", check)


def mark_open(ws: Workspace, slug: str, step_id: str) -> Step:
    """Flip exactly this ticked step's box back to `[ ]` (a re-proof found it failing); every
    other byte of the file stays as it was."""

    def check(step: Step) -> None:
        if step.mark != "done":
            raise StepError(f"step {step.name} is {step.mark}, not done")

    return _flip(ws, slug, step_id, b" ", check)


def _flip(
    ws: Workspace, slug: str, step_id: str, mark: bytes, check: Callable[[Step], None]
) -> Step:
    """Set one step's box to `mark` under the roadmap's lock, once `check` accepts the step."""
    slug = ws.canonical(slug)
    path = ws.roadmap_path(slug)
    if not path.resolve().is_relative_to(ws.root.resolve()):
        raise RoadmapError(
            f"roadmaps/{slug}.md leads outside the workspace, to {path.resolve()}; it is not written"
        )
    with state.locked(ws.state / LOCKS / f"roadmap-{slug}.lock"):
        data = path.read_bytes()
        current = loading.parse_bytes(ws, data, path)
        step = next((s for s in current.steps if s.id == step_id), None)
        if step is None:
            raise StepError(f"step {step_id} is no longer in roadmap `{slug}`")
        check(step)
        start, end = line_span(data, step.line)
        flipped, count = _BOX.subn(rb"\1[" + mark + rb"]", data[start:end], count=1)
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
Clock = Callable[[], float]  # the wall clock, read when a verify run ends (core/times.py)


NOT_RECORDED = "the files it reads (trusted before agentcfg recorded them)"


def changed_checks(
    ws: Workspace, slug: str, steps: Sequence[Step], env: Mapping[str, str]
) -> dict[str, tuple[str, ...]]:
    """Step id -> the guarded files of its check that changed, were deleted or were created
    since a person trusted it, for the steps whose check changed. A check trusted before its
    files were recorded counts as changed: nothing says what it read then."""
    trusted = trust.trusted_guards(ws, slug, env)
    tree = guard.Tree(ws.root)
    found: dict[str, tuple[str, ...]] = {}
    for step in steps:
        if not step.verify:
            continue
        taken = trusted.get(step.id)
        files = (NOT_RECORDED,) if taken is None else tree.changed(taken)
        if files:
            found[step.id] = files
    return found


def refuse_changed(
    ws: Workspace,
    slug: str,
    roadmap: Roadmap,
    step: Step,
    env: Mapping[str, str],
    clock: Clock = wall_clock,
) -> None:
    """CheckChangedError when the step's check changed since trust; the refusal is logged and
    remembered for the stop hook, which halts the run at the next turn end."""
    files = changed_checks(ws, slug, [step], env).get(step.id)
    if not files:
        guard.forget_refusal(ws, slug, step.id)
        return
    now = clock()
    guard.remember_refusal(ws, slug, step, files, now)
    log(ws, events.CHECK_CHANGED, slug, roadmap, env, now, step=step.id, files=list(files))
    raise CheckChangedError(slug, step.name, files)


def _enough(ws: Workspace, slug: str, env: Mapping[str, str], found: str) -> bool:
    """Whether evidence of this word may close a step: contract.require, if set, asks one."""
    required = guard.settings(ws, slug, env)[1]
    return not required or found == required


def prove(
    ws: Workspace,
    slug: str,
    roadmap: Roadmap,
    step: Step,
    env: Mapping[str, str],
    echo: Echo | None = None,
    clock: Clock = wall_clock,
) -> VerifyResult:
    """Run one step's verify line after its check is found as trusted; record the `verified`
    event and, when it passes, the step's receipt."""
    refuse_changed(ws, slug, roadmap, step, env, clock)
    result = run(step, ws.root, _timeout(ws, env), echo)
    if result.passed:
        result = dataclasses.replace(result, evidence=evidence.grade(ws, slug, step, env))
    counts = result.passed and _enough(ws, slug, env, result.evidence)
    receipt(ws, slug, roadmap, step, env, result, counts, clock)
    return result


def receipt(
    ws: Workspace,
    slug: str,
    roadmap: Roadmap,
    step: Step,
    env: Mapping[str, str],
    result: VerifyResult | None,
    counts: bool = True,
    clock: Clock = wall_clock,
) -> dict[str, object] | None:
    """The `verified` event of a verify run (`result`), or of a step with no verify line to
    run; a passing one that `counts` (its evidence is what contract.require asks) is also the
    step's receipt, which closes it in the run's contract and answers the gate: its fields
    are returned, the verify line as it ran (`line`) and when it passed (`at`) among them."""
    from agentcfg.contract import store as contract
    from agentcfg.contract.model import command_hash, text_hash

    moment = clock()
    fields: dict[str, object] = {
        "step": step.id,
        "text": text_hash(step.text),
        "command": command_hash(result.command if result else None),
        "exit_code": result.exit_code if result else None,
        "duration": round(result.duration, 3) if result else 0.0,
        "output": result.output if result else None,
        "evidence": result.evidence if result and result.passed else None,
        **git_facts(ws.root),
    }
    passed = result is None or result.passed
    refused = {} if counts or not passed else {"refused": "contract.require"}
    log(ws, events.VERIFIED, slug, roadmap, env, moment, **fields, passed=passed, **refused)
    if not (passed and counts):
        return None
    made = {**fields, "line": result.command if result else None, "at": iso_ms(moment)}
    contract.add_receipt(ws, slug, made, roadmap)
    return made


GIT_TIMEOUT = 10.0


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """`git ARGS` in `root`, bounded by GIT_TIMEOUT; None when it could not run at all."""
    try:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, encoding="utf-8",
            errors="surrogateescape", timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None


def committed(root: Path, path: str) -> bool:
    """Whether git tracks the file at `path` (relative to `root`) and it is as HEAD holds it."""
    tracked = git(root, "ls-files", "--error-unmatch", "--", path)
    same = git(root, "diff", "--quiet", "HEAD", "--", path)
    return tracked is not None and same is not None and tracked.returncode == same.returncode == 0


def git_facts(root: Path) -> dict[str, object]:
    """The commit the workspace is at and whether its tree differs from it (untracked files
    count); both None outside a git repository's work tree, `head` None before the first
    commit. One git process: the status's header names the commit."""
    status = git(root, "status", "--porcelain=v2", "--branch")
    if status is None or status.returncode != 0:
        return {"head": None, "dirty": None}
    lines = status.stdout.splitlines()
    head = next((line.split()[-1] for line in lines if line.startswith("# branch.oid ")), None)
    return {
        "head": None if head == "(initial)" else head,
        "dirty": any(not line.startswith("# ") for line in lines),
    }


def verify_steps(
    ws: Workspace,
    slug: str,
    queries: Sequence[str],
    env: Mapping[str, str],
    echo: Callable[[Step], Echo | None] = lambda step: None,
    clock: Clock = wall_clock,
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
    return [prove(ws, slug, roadmap, step, env, echo(step), clock) for step in chosen]


def take_baseline(
    ws: Workspace,
    slug: str,
    env: Mapping[str, str],
    every: bool = False,
    echo: Callable[[Step, VerifyResult], None] = lambda step, result: None,
    clock: Clock = wall_clock,
) -> tuple[list[VerifyResult], list[str]]:
    """Run the verify line of each open step the baseline lacks (of `every` open step with one)
    once, before the work: no receipt, no box; each result goes to `echo` as it ends. A line
    no person trusted is not run: its step is named in the second list."""
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    opened = [s for s in roadmap.steps if s.is_open and s.verify]
    chosen = opened if every else evidence.missing(ws, slug, opened)
    known = trust.trusted_lines(ws, slug, env)
    untrusted = [s.id for s in chosen if known.get(s.id) != trust.digest(s.verify or "")]
    timeout = _timeout(ws, env)
    results = []
    for step in chosen:
        if step.id not in untrusted:
            results.append(run(step, ws.root, timeout))
            echo(step, results[-1])
    if results:
        ran = {r.step: (r.command, r.exit_code) for r in results}
        evidence.record(ws, slug, ran, git_facts(ws.root), clock())
    return results, untrusted


def _timeout(ws: Workspace, env: Mapping[str, str]) -> float:
    from agentcfg.config import load_config

    return load_config(ws, env).verify_timeout


@dataclass(frozen=True)
class Done:
    """What `roadmap done` did: the step, its verify run, whether the box was ticked, and
    whether the step now has a receipt."""

    step: Step
    result: VerifyResult | None  # None with --no-verify
    marked: bool
    proven: bool = False
    already: bool = False  # the box was ticked before (by hand, or with --no-verify)


def done(
    ws: Workspace,
    slug: str,
    query: str,
    env: Mapping[str, str],
    no_verify: bool = False,
    clock: Clock = wall_clock,
) -> Done:
    """`roadmap done`: run the step's verify line; when it passes, tick exactly its box and
    record the step's receipt.

    A failing verify line leaves the box open (`marked` False). A box ticked without a
    receipt gets one the same way. `--no-verify` ticks a step with a verify line unproven;
    a step with none has nothing to run, and its receipt says so.
    """
    slug = ws.canonical(slug)
    roadmap = loading.load(ws, slug)
    step = find_step(roadmap, query)
    already = step.mark == "done"
    if already and no_verify and step.verify:
        raise StepError(f"step {step.name} is done already; only its verify line can prove it")
    if not already:
        check_markable(step)
        closed = closed_in_session(ws, slug, env)
        if closed is not None and closed != step.id:
            raise StepError(
                f"this session closes one step (`agentcfg run --fresh-per-step`) and has closed "
                f"{closed}: end your turn now; step {step.name} is for a session of its own"
            )
    result = None
    if step.verify and not no_verify:
        trust.require(ws, slug, [step], env)
        result = prove(ws, slug, roadmap, step, env, clock=clock)
        if not result.passed:
            return Done(step, result, marked=False, already=already)
        if not _enough(ws, slug, env, result.evidence):
            raise StepError(
                f"the check of step {step.name} passed, but its evidence is {result.evidence} "
                f"({EXPLAINED[result.evidence]}) and contract.require asks red-green; "
                f"the box stays open"
            )
    elif not step.verify:
        if not no_verify:
            require_verify(step, "pass --no-verify to mark it anyway")
        receipt(ws, slug, roadmap, step, env, None, clock=clock)
    if not already:
        mark_done(ws, slug, step.id, None if result is None else result.command)
        log(
            ws, events.MARKED_DONE, slug, loading.load(ws, slug), env, clock(),
            step=step.id, verified=not no_verify,
        )  # fmt: skip
    return Done(step, result, marked=not already, proven=not step.verify or not no_verify,
                already=already)  # fmt: skip


@dataclass(frozen=True)
class TrustPlan:
    """What `roadmap trust` shows before the person says yes."""

    slug: str
    roadmap: Roadmap
    steps: list[Step]  # the steps with a verify line
    changes: list[str]  # the contract changes since the runs on this roadmap began
    checks: dict[str, tuple[str, ...]]  # step id -> its check's files changed since trust


def plan_trust(ws: Workspace, slug: str, env: Mapping[str, str], now: float) -> TrustPlan:
    """The verify lines and the contract changes `roadmap trust` shows; ClaimError when run
    from inside a session that holds a claim on the roadmap (only a person accepts)."""
    from agentcfg import claims
    from agentcfg.contract import store as contract
    from agentcfg.contract.model import judge
    from agentcfg.hosts.registry import session_env

    slug = ws.canonical(slug)
    for name in claims.session_names(session_env()):
        session = env.get(name)
        held = claims.read_claim(ws, claims.session_key(session)) if session else None
        if held is not None and held.slug == slug:
            raise ClaimError(
                f"`roadmap trust` is the person's command: this shell's ${name} is session "
                f"{session}, which holds the claim on `{slug}`; run it from your own terminal"
            )
    roadmap = loading.load(ws, slug)
    receipts = contract.read_receipts(ws, slug)
    changes: dict[str, None] = {}
    for key, _path in contract.records(ws, slug):
        found, problem = contract.read(ws, key, slug)
        if found is None:
            changes[f"the contract record {contract.shown(ws, key, slug)} is {problem}"] = None
            continue
        for change in judge(found, roadmap, receipts, now).changes:
            changes[change.describe()] = None
    steps = [s for s in roadmap.steps if s.verify]
    trusted = trust.trusted_lines(ws, slug, env)
    checks = changed_checks(ws, slug, [s for s in steps if s.id in trusted], env)
    return TrustPlan(slug, roadmap, steps, list(changes), checks)


def trust_notify(ws: Workspace, env: Mapping[str, str], now: float) -> tuple[str, ...]:
    """`roadmap trust` trusts the workspace's notify command too; the command (or nothing)."""
    from agentcfg.config import load_config

    command = load_config(ws, env).notify
    if command:
        trust.record_notify(ws, command, env, now)
    return command


def trust_roadmap(
    ws: Workspace, plan: TrustPlan, env: Mapping[str, str], now: float
) -> tuple[Path, int]:
    """`roadmap trust`: trust every verify line of the roadmap (each for its own step) and
    accept the roadmap as the contract of every live run on it.

    Returns the store's path and how many runs were re-baselined.
    """
    from agentcfg import claims
    from agentcfg.contract import store as contract

    store = trust.record(ws, plan.slug, plan.steps, env, now)
    guard.forget_refusals(ws, plan.slug)
    live = {c.key for c in claims.all_claims(ws) if c.slug == plan.slug}
    runs = contract.rebaseline(ws, plan.slug, plan.roadmap, live, now)
    log(
        ws, events.TRUSTED, plan.slug, plan.roadmap, env, now,
        steps=[step.id for step in plan.steps], accepted=plan.changes, runs=runs,
        checks={step: list(files) for step, files in plan.checks.items()},
    )  # fmt: skip
    return store, runs
