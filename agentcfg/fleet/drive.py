"""`agentcfg run --agents N`: a fleet of members on one roadmap, each in a git worktree of its own.

The fleet's branch (the branch checked out where the command runs, or `--into`) is the truth.
Each member loops: bring its worktree to the fleet's branch, lease the first step ready in the
roadmap's order (waiting, and saying on what, while none is), let the host work that one step
to its proof, commit, and integrate into the fleet's branch (one integration at a time, under
a lock); then give the lease back and go again. A failed integration reopens the step and
keeps the member's branch for a person.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentcfg import install, loading, state
from agentcfg.config import load_config
from agentcfg.contract import evidence, finals, trust
from agentcfg.contract.reprove import Reproof, guarded, reprove
from agentcfg.core import events
from agentcfg.core.order import Readiness, readiness, side_by_side, waits_json, waits_line
from agentcfg.core.roadmap import Roadmap, scan
from agentcfg.core.texts import plural
from agentcfg.core.times import wall_clock
from agentcfg.errors import AgentcfgError, InstallError, IntegrationError, LeaseError, LeaseHeld
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.integrate import Integration, blob, git, integrate
from agentcfg.fleet.leases import PREFIX, TTL, Lease, Store
from agentcfg.hosts.defaults import settings_hook
from agentcfg.hosts.registry import adapter
from agentcfg.paths import LOCKS, ROADMAPS, STATE, WORKTREES
from agentcfg.run import driver
from agentcfg.run.runners import GRACE
from agentcfg.workspace import Workspace

INTEGRATION_LOCK_WAIT = 3600.0  # integrations queue behind each other, each runs a verify line
REOPEN_LIMIT = 2  # a step reopened this often is left to a person
LEFT_TO_A_PERSON = events.EXIT_CODES[
    events.HANDBACK_QUESTION
]  # only such steps are left: a person's turn
POLL = 2.0  # the longest wait between looks while every open step is another member's
WATCH_EVERY = 0.05  # seconds between looks at the lease and branch refs while a member waits
PUBLISH_TRIES = 5
GIT_WAIT = 300.0  # seconds the longest git command a fleet runs (a fetch, a merge) may take
DONE_GRACE = 30.0  # seconds a member may still run once no step is open: it gives back and ends
# a member's own end after SIGINT: its host's two graces and the wait for its output, and more
MEMBER_END_WAIT = 2 * GRACE + driver.TAIL_WAIT + 5.0

# what a member's host does with its leased step: (the run's ending, its exit code)
Work = Callable[[Workspace, Lease], tuple[str, int]]


@dataclass(frozen=True)
class Fleet:
    """Where a fleet lives: the workspace holding the fleet's branch, and how it coordinates."""

    root: Path  # the checkout of the fleet's branch, where integrations are committed
    slug: str
    into: str  # the fleet's branch
    host: str
    coordinate: str | None = None
    ttl: float = TTL

    def branch(self, n: int) -> str:
        return f"agentcfg/{self.slug}/{n}"

    def worktree(self, n: int) -> Path:
        return self.root / STATE / WORKTREES / self.slug / str(n)


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return git(cwd, *args, check=check, timeout=GIT_WAIT)


def plan(
    root: Path, slug: str, host: str, into: str | None, coordinate: str | None, ttl: float
) -> Fleet:
    """The fleet, every check made before anything is created; AgentcfgError otherwise."""
    Store.open(root, coordinate)  # a git repository, and the remote when one is named
    ws = Workspace(root)
    slug = ws.canonical(slug)
    current = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    if not current:
        raise AgentcfgError(f"{root} has no branch checked out: a fleet integrates into a branch")
    if into is not None and into != current:
        raise AgentcfgError(f"--into {into}: check out `{into}` here first (now on `{current}`)")
    if _git(root, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise AgentcfgError(
            f"the fleet's branch `{current}` has uncommitted changes: commit or stash them first"
        )
    tracked = _git(root, "ls-files", "--error-unmatch", "--", f"roadmaps/{slug}.md", check=False)
    if tracked.returncode != 0:
        raise AgentcfgError(f"roadmaps/{slug}.md is not committed on `{current}`: commit it first")
    fleet.check_leasable(loading.load(ws, slug), slug)
    return Fleet(root, slug, current, host, coordinate, ttl)


def prepare_members(plan_: Fleet, agents: int, env: Mapping[str, str]) -> list[Workspace]:
    """A worktree and branch per member, at the fleet branch's tip, with the trust the person
    gave the fleet's roadmap carried to each member's copy of it (the same lines only)."""
    members = []
    for n in range(1, agents + 1):
        tree = plan_.worktree(n)
        if not (tree / ".git").exists():
            tree.parent.mkdir(parents=True, exist_ok=True)
            _git(
                plan_.root,
                "worktree",
                "add",
                "--quiet",
                "-B",
                plan_.branch(n),
                str(tree),
                plan_.into,
            )
        members.append(Workspace(tree))
    for member in members:
        _carry_trust(Workspace(plan_.root), member, plan_.slug, env)
        hook_for(plan_.host, member, env)
    return members


def hook_for(host: str, member: Workspace, env: Mapping[str, str]) -> Path | None:
    """Our stop hook where the member's host reads it, whatever the person committed: the
    project's file as git left it holds a hook that runs, or the person's own (user) file does,
    or the plugin; else the fleet writes it into the member's worktree. The file it wrote, which
    the member's commits leave out; None when it wrote none. AgentcfgError when it cannot."""
    spec = adapter(host)
    home = Path(env.get("HOME") or Path.home())
    if settings_hook(spec, member.root, home, env) is not None:
        return None
    if spec.plugin(member.root, home, env) is not None:
        return None
    try:
        wiring = install.wire(host, "project", member.root, home, env)
    except InstallError as exc:
        raise AgentcfgError(f"cannot install the stop hook in a member's worktree: {exc}") from None
    path = wiring.changes[0].path
    unmet = [f.message for f in wiring.missing if f.level == "error"]
    if unmet or settings_hook(spec, member.root, home, env) != path:
        why = unmet[0] if unmet else f"{spec.TITLE} does not read it"
        raise AgentcfgError(
            f"the stop hook written to {path} would not run: {why}; install it once for your "
            f"user instead: agentcfg hooks install --host {host} --scope user"
        )
    return path


def _carry_trust(main: Workspace, member: Workspace, slug: str, env: Mapping[str, str]) -> None:
    trusted = trust.trusted_lines(main, slug, env)
    steps = [
        step
        for step in loading.load(member, slug).steps
        if step.verify and trust.digest(step.verify) == trusted.get(step.id)
    ]
    if steps:  # each check as the person trusted it in the main workspace, not as it is now
        guards = trust.trusted_guards(main, slug, env)
        kept = {step.id: guards[step.id] for step in steps if step.id in guards}
        trust.record(member, slug, steps, env, wall_clock(), guards=kept)
    taken = evidence.read_baseline(main, slug)  # the baseline the members' evidence is graded by
    if taken:
        evidence.write_baseline(member, slug, taken)


def sync(plan_: Fleet, member: Workspace, n: int, synced: str | None = None) -> str:
    """The member's worktree and branch at the fleet branch's tip, its own files cleared; the
    tip. Given the tip an earlier sync left it at, a worktree whose branch has not moved since
    is left as it is."""
    if plan_.coordinate is not None:
        tip = _fetch_tip(plan_, n)
    else:
        tip = _git(plan_.root, "rev-parse", "--verify", "--quiet", plan_.into).stdout.strip()
    if tip != synced:
        _git(member.root, "reset", "--quiet", "--hard", tip)
        _git(member.root, "clean", "--quiet", "-fd", f"--exclude={STATE}/")
    return tip


def _fetch_tip(plan_: Fleet, n: int) -> str:
    """The remote's tip of the fleet's branch into member `n`'s own ref, with no lock; the
    checkout of the fleet's branch brought to it (under the integration lock, a fast-forward)
    only when it is not there already. The fleet's branch's tip here."""
    fetched = f"refs/agentcfg/fetched/{plan_.slug}/{n}"
    _git(plan_.root, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=",
         plan_.coordinate or "", f"+refs/heads/{plan_.into}:{fetched}")  # fmt: skip
    tips = _git(plan_.root, "rev-parse", fetched, plan_.into, check=False).stdout.split()
    if len(tips) == 2 and tips[0] == tips[1]:
        return tips[1]
    with _integration_lock(plan_):  # the checkout of the fleet's branch moves
        _git(plan_.root, "merge", "--quiet", "--ff-only", fetched, check=False)
        return _git(plan_.root, "rev-parse", "--verify", "--quiet", plan_.into).stdout.strip()


def _catch_up(plan_: Fleet) -> None:
    """The checkout of the fleet's branch at the remote's tip, where it can get there by a
    fast-forward (under the integration lock)."""
    _git(plan_.root, "fetch", "--quiet", plan_.coordinate or "", plan_.into)
    _git(plan_.root, "merge", "--quiet", "--ff-only", "FETCH_HEAD", check=False)


@dataclass
class _Turns:
    """What a member keeps from one look at the fleet to the next."""

    mine: list[str] = field(default_factory=list)  # the steps this member integrated
    told: list[object] = field(default_factory=lambda: [None])  # the wait last told, once each
    idle: int = 0  # looks in a row that found nothing ready and nothing in progress


def member_loop(
    plan_: Fleet,
    member: Workspace,
    n: int,
    work: Work,
    env: Mapping[str, str],
    *,
    timeout: float,
    sleep: Callable[[float], object] | None = None,
    say: Callable[[str], None] = print,
    poll: float = POLL,
) -> int:
    """One member's whole part: step after step until nothing is left open to the fleet.

    With no step ready (each open one waits for a step another member holds), it waits and
    says on what: `sleep(poll)`, or by default until a lease or the fleet's branch moves (at
    most `poll` seconds). Returns 0 when the fleet's roadmap has no open step,
    LEFT_TO_A_PERSON when the open steps left were all reopened too often or wait for steps no
    one works on (ones reopened too often, blocked ones, each other), else the host run's
    exit code."""
    main = Workspace(plan_.root)
    turns = _Turns()
    watched = Store.open(plan_.root, plan_.coordinate).watched(
        f"{PREFIX}/{plan_.slug}", f"refs/heads/{plan_.into}"
    )
    while True:
        before = look(watched)  # taken before anything is read: what moves after it wakes a wait
        tip = sync(plan_, member, n)
        written = hook_for(plan_.host, member, env)  # the sync cleared what the fleet wrote
        roadmap = loading.load(member, plan_.slug)
        excluded = _reopened_too_often(main, plan_.slug)
        ended = _nothing_left(plan_, roadmap, excluded, turns, say)
        if ended is not None:
            return ended
        found = readiness(roadmap)
        lease = _lease_ready(plan_, member, n, found, excluded)
        if lease is None:
            ended = _none_leased(plan_, member, n, found, turns, say)
            if ended is not None:
                return ended
            if turns.idle:  # a second look, at once
                continue
            if sleep is not None:
                sleep(poll)
            else:  # leases given back or run out, and integrations make steps ready
                wait_for_change(watched, before, poll)
            continue
        turns.idle = 0
        # Another member may have closed the step since the sync above and given its lease
        # back just before this one was taken: a second look at the fleet's branch tells.
        if sync(plan_, member, n, tip) != tip and lease.step not in {
            step.id for step in loading.load(member, plan_.slug).steps if step.is_open
        }:
            fleet.leave(member, plan_.slug, wall_clock())
            continue
        ended = _do_step(plan_, member, n, lease, work, env, timeout, written, turns, say)
        if ended is not None:
            return ended


def _nothing_left(
    plan_: Fleet,
    roadmap: Roadmap,
    excluded: frozenset[str],
    turns: _Turns,
    say: Callable[[str], None],
) -> int | None:
    """The member's exit code when no step is left open to it, after its last line; else None."""
    still_open = {step.id for step in roadmap.steps if step.is_open}
    if not still_open:
        say(_member_end(plan_, turns.mine, "no step is left open on the fleet's branch"))
        return 0
    if still_open <= excluded:
        left = ", ".join(sorted(still_open))
        say(_member_end(plan_, turns.mine, f"the steps left open ({left}) wait for a person"))
        return LEFT_TO_A_PERSON
    return None


def _lease_ready(
    plan_: Fleet, member: Workspace, n: int, found: Readiness, excluded: frozenset[str]
) -> Lease | None:
    """The lease of the first ready step no one holds; None when every one is another's."""
    if not {step.id for step in found.ready} - excluded:
        return None
    with contextlib.suppress(LeaseHeld):  # every ready step is another member's
        return fleet.join(
            member,
            plan_.slug,
            fleet.AUTO,
            host=plan_.host,
            coordinate=plan_.coordinate,
            now=wall_clock(),
            ttl=plan_.ttl,
            exclude=excluded,
            ledger=Workspace(plan_.root),
            member=n,
        )
    return None


def _none_leased(
    plan_: Fleet,
    member: Workspace,
    n: int,
    found: Readiness,
    turns: _Turns,
    say: Callable[[str], None],
) -> int | None:
    """With no step leased: None to look again (after a wait while others hold steps, which
    is told once), or LEFT_TO_A_PERSON when no step can start and none is in progress."""
    busy = fleet.held(member, plan_.slug, plan_.coordinate, wall_clock())
    if busy:
        turns.idle = 0
        _waiting(plan_, n, found, busy, turns.told, say)
        return None
    turns.idle += 1  # a second look, after a sync, sees what was integrated meanwhile
    if turns.idle < 2:
        return None
    say(
        f"member {n}: no step of `{plan_.slug}` can start and none is in progress: "
        f"{waits_line(found.waiting) or 'the steps left were reopened too often'}"
    )
    return LEFT_TO_A_PERSON


def _do_step(
    plan_: Fleet, member: Workspace, n: int, lease: Lease, work: Work, env: Mapping[str, str],
    timeout: float, written: Path | None, turns: _Turns, say: Callable[[str], None],
) -> int | None:  # fmt: skip
    """The host's work on the leased step, committed and integrated (or the step reopened),
    the lease given back; the host run's exit code when it did not complete, else None."""
    ending, code = work(member, lease)
    if ending != events.COMPLETE:
        fleet.leave(member, plan_.slug, wall_clock())
        say(_member_end(plan_, turns.mine, f"step {lease.step} ended {ending}"))
        return code
    _commit(member, f"agentcfg: {plan_.slug} step {lease.step}", written)
    try:
        fleet.require_lease(member, plan_.slug, lease.step)
    except LeaseError as lost:
        _log(plan_, events.LEASE_LOST, step=lease.step, member=n, why=str(lost))
        say(f"step {lease.step} not integrated: {lost}; the fleet goes on")
        return None
    result = _integrate(plan_, member, n, lease, env, timeout)
    if result.outcome == "integrated":
        _log(plan_, events.INTEGRATED, step=lease.step, member=n,
             branch=plan_.branch(n), commit=result.commit, unticked=list(result.unticked))  # fmt: skip
        turns.mine.append(lease.step)
        say(f"step {lease.step} integrated into `{plan_.into}`; the fleet goes on")
    else:
        kept = f"agentcfg/{plan_.slug}/kept/{lease.step}-{n}"
        _git(plan_.root, "branch", "--force", kept, plan_.branch(n))
        _log(plan_, events.REOPENED, step=lease.step, member=n, branch=kept,
             reason=result.outcome, detail=result.detail)  # fmt: skip
        why = result.outcome + (f": {result.detail}" if result.detail else "")
        say(f"step {lease.step} reopened ({why}), its work kept on `{kept}`; the fleet goes on")
    fleet.leave(member, plan_.slug, wall_clock())
    return None


def look(paths: Sequence[Path]) -> tuple[object, ...]:
    """What the files at `paths` (a folder: each file in it) are now, as far as a change to
    any of them shows: each one's inode, size and time of change."""
    seen: list[object] = []
    for path in paths:
        try:
            found = path.stat()
        except OSError:
            seen.append(None)
            continue
        seen.append((found.st_ino, found.st_size, found.st_mtime_ns))
        if stat.S_ISDIR(found.st_mode):
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                for entry in entries:
                    one = entry.stat(follow_symlinks=False)
                    seen.append((entry.name, one.st_ino, one.st_size, one.st_mtime_ns))
    return tuple(seen)


def wait_for_change(
    paths: Sequence[Path], before: tuple[object, ...], longest: float, every: float = WATCH_EVERY
) -> bool:
    """Wait until the files at `paths` are no longer as `before` saw them, looking every
    `every` seconds, `longest` seconds at most; whether they changed. With nothing to watch
    (leases on a remote reached by a network), the whole wait."""
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        time.sleep(min(every, max(0.0, deadline - time.monotonic())))
        if paths and look(paths) != before:
            return True
    return False


def _member_end(plan_: Fleet, mine: list[str], why: str) -> str:
    """A member's last line: its own steps, and why it stops; never the fleet's ending."""
    done = f"{plural(len(mine), 'step')} integrated" + (f" ({', '.join(mine)})" if mine else "")
    return f"member done on `{plan_.slug}`: {done}; {why}"


def _integrate(
    plan_: Fleet, member: Workspace, n: int, lease: Lease, env: Mapping[str, str], timeout: float
) -> Integration:
    with _integration_lock(plan_):
        for _ in range(PUBLISH_TRIES):
            result = integrate(
                plan_.root, plan_.branch(n), plan_.slug, lease.step, env, timeout=timeout
            )
            if result.outcome != "integrated" or _publish(plan_):
                return result
            # another machine pushed first: start again from its branch
            _git(plan_.root, "fetch", "--quiet", plan_.coordinate or "", plan_.into)
            _git(plan_.root, "reset", "--quiet", "--hard", "FETCH_HEAD")
    raise IntegrationError(f"lost the race to push `{plan_.into}` {PUBLISH_TRIES} times")


def _integration_lock(plan_: Fleet) -> contextlib.AbstractContextManager[None]:
    lock = plan_.root / STATE / LOCKS / f"fleet-{plan_.slug}.lock"
    return state.locked(lock, timeout=INTEGRATION_LOCK_WAIT)


def _publish(plan_: Fleet) -> bool:
    """Push the fleet's branch to the shared remote, as a fast-forward only: a tip another
    machine pushed that this one has not built on refuses it."""
    if plan_.coordinate is None:
        return True
    pushed = _git(plan_.root, "push", "--quiet", "--porcelain", plan_.coordinate,
                  f"HEAD:refs/heads/{plan_.into}", check=False)  # fmt: skip
    return pushed.returncode == 0


def _waiting(
    plan_: Fleet,
    n: int,
    found: Readiness,
    busy: frozenset[str],
    told: list[object],
    say: Callable[[str], None],
) -> None:
    """Tell, once for each new state of the fleet, that member `n` waits and on what."""
    waits = waits_json(found.waiting)
    if told[0] == (waits, busy):
        return
    told[0] = (waits, busy)
    ready = [step.name for step in found.ready if step.id in busy]
    what = waits_line(found.waiting, busy)
    if ready:
        what = f"{', '.join(ready[:4])} in progress{'; ' + what if what else ''}"
    say(f"member {n} waiting: {what}")
    _log(plan_, events.WAITING, member=n, waits=_clipped(waits),
         in_progress=sorted(busy)[:20])  # fmt: skip


def _clipped(waits: dict[str, list[str]], limit: int = 20) -> dict[str, list[str]]:
    """The first `limit` waiting steps, each with the first `limit` it waits for."""
    return {step: on[:limit] for step, on in list(waits.items())[:limit]}


def _reopened_too_often(main: Workspace, slug: str) -> frozenset[str]:
    counts: dict[str, int] = {}
    for record in _events(main, slug):
        step = record.get("step")
        if record.get("event") == events.REOPENED and isinstance(step, str):
            counts[step] = counts.get(step, 0) + 1
    return frozenset(step for step, times in counts.items() if times >= REOPEN_LIMIT)


def _commit(member: Workspace, message: str, written: Path | None = None) -> None:
    """Commit what the member's host made of its step (state/ ignores itself), less the host
    settings the fleet wrote for it (`written`): they hold a path of this machine."""
    left_out = [] if written is None else [f":(exclude){written.relative_to(member.root)}"]
    _git(member.root, "add", "--all", "--", ".", *left_out)
    if _git(member.root, "diff", "--cached", "--quiet", check=False).returncode != 0:
        _git(member.root, "commit", "--quiet", "--no-verify", "-m", message)


def _log(plan_: Fleet, event: str, **fields: object) -> None:
    """One event in the fleet's ledger, with the counts of the roadmap as the tip of the
    fleet's branch holds it: the checkout's own file is written anew while another member
    integrates, and read then it may be gone or half there."""
    main = Workspace(plan_.root)
    name = f"{ROADMAPS}/{plan_.slug}.md"
    data = blob(plan_.root, f"refs/heads/{plan_.into}:{name}")
    if data is None:
        raise IntegrationError(f"{name} is not on `{plan_.into}`: a fleet's roadmap is committed")
    counts = scan(loading.parse_bytes(main, data, plan_.root / name)).counts
    record = state.event(
        event, wall_clock(), None, plan_.slug, open=counts.open, blocked=counts.blocked, **fields
    )
    state.append_ledger(main.state, record)


def start_members(
    plan_: Fleet,
    members: Sequence[Workspace],
    argv: Callable[[int], list[str]],
    env: Mapping[str, str],
) -> list[subprocess.Popen[bytes]]:
    """One member process per worktree, each its own process group (so one can be ended
    with everything it started), with its worktree as the workspace of everything it starts:
    a person's AGENTCFG_ROOT naming the fleet's checkout would put every member's claims,
    hooks and agent commands there, where no lease holds a member to its step."""
    return [
        subprocess.Popen(
            argv(n),
            cwd=member.root,
            env={**env, "AGENTCFG_ROOT": str(member.root)},
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        for n, member in enumerate(members, 1)
    ]


def member_argv(plan_: Fleet, n: int, extra: Sequence[str]) -> list[str]:
    """The command line of member `n`: this interpreter, isolated from the worktree's files."""
    line = [
        sys.executable, "-I", "-m", "agentcfg", "run", plan_.slug, "--host", plan_.host,
        "--member", str(n), "--fleet-root", str(plan_.root), "--into", plan_.into,
        "--lease-ttl", f"{max(1, round(plan_.ttl))}s",
    ]  # fmt: skip
    if plan_.coordinate:
        line += ["--coordinate", plan_.coordinate]
    return [*line, *extra]


def wait_members(
    procs: Sequence[subprocess.Popen[bytes]],
    done: Callable[[], bool] | None = None,
    grace: float = DONE_GRACE,
    poll: float = 1.0,
    end_wait: float = MEMBER_END_WAIT,
) -> list[int]:
    """Every member's exit code; Ctrl-C ends each member's whole process group. Once `done`
    says no step is open on the fleet's branch, a member still running `grace` later (its host
    hung on a step another member took over and integrated) is ended as a Ctrl-C ends it."""
    try:
        finished: float | None = None
        while any(proc.poll() is None for proc in procs):
            if finished is None and done is not None and done():
                finished = time.monotonic()
            if finished is not None and time.monotonic() - finished >= grace:
                _end_members(procs, end_wait)
                break
            time.sleep(poll)
        return [proc.wait() for proc in procs]
    except KeyboardInterrupt:
        _end_members(procs, end_wait)
        raise


def _end_members(procs: Sequence[subprocess.Popen[bytes]], wait: float) -> None:
    """SIGINT to each running member's group, as Ctrl-C: its driver ends its host and tells
    its ending; a member not ended within `wait` is killed (a watchdog ends its host)."""
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + wait
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _none_open(ws: Workspace, slug: str) -> bool:
    """No step of the roadmap is open on the fleet's branch (its checkout here)."""
    try:
        return scan(loading.load(ws, slug)).counts.open == 0
    except AgentcfgError:
        return False


def run_fleet(
    ws: Workspace, slug: str, host: str, agents: int, into: str | None,
    coordinate: str | None, ttl: float, passed: Sequence[str],
    say: Callable[[str], None] = print, env: Mapping[str, str] = os.environ,
    baseline: Callable[[], None] = lambda: None,
    member_check: Callable[[Workspace], object] = lambda tree: None,
) -> int:  # fmt: skip
    """`run --agents N`: the members' worktrees, one member process each, until every one has
    ended; the worktrees are removed at the end (a reopened step's branch is kept). The
    `baseline` is taken once the fleet can start, before the members get their copies of it;
    `member_check` asks of a member's worktree what its process will ask before it starts
    (AgentcfgError: what would stop every member, said once, before any starts)."""
    the_fleet = plan(ws.root, slug, host, into, coordinate, ttl)
    if coordinate is not None:  # start where the other machines are
        with _integration_lock(the_fleet):
            _catch_up(the_fleet)
    done_before = scan(loading.load(ws, the_fleet.slug)).counts.done
    if agents > 1 and (alone := one_at_a_time(loading.load(ws, the_fleet.slug))):
        say(f"roadmap `{the_fleet.slug}` {alone}")
    baseline()
    try:
        members = prepare_members(the_fleet, agents, env)
        member_check(members[0])
    except AgentcfgError as exc:
        _remove(the_fleet, agents)
        raise AgentcfgError(f"every member would stop: {exc}") from None
    try:
        _log(the_fleet, events.FLEET_START, agents=agents, into=the_fleet.into,
             coordinate=coordinate)  # fmt: skip
        say(f"fleet of {agents} on `{the_fleet.slug}` into `{the_fleet.into}`")
        procs = start_members(the_fleet, members, lambda n: member_argv(the_fleet, n, passed), env)
        for n, proc in enumerate(procs, 1):
            _log(the_fleet, events.MEMBER_STARTED, member=n, pid=proc.pid,
                 worktree=str(the_fleet.worktree(n)))  # fmt: skip
        codes = wait_members(procs, lambda: _none_open(ws, the_fleet.slug))
    finally:
        _remove(the_fleet, len(members))
    return _fleet_end(ws, the_fleet, done_before, codes, env, say)


def _fleet_end(
    ws: Workspace,
    the_fleet: Fleet,
    done_before: int,
    codes: list[int],
    env: Mapping[str, str],
    say: Callable[[str], None],
) -> int:
    """Once every member has ended: the final re-proof when every step is done, the fleet's
    ending in the ledger and in one line, and the command's exit code."""
    counts = scan(loading.load(ws, the_fleet.slug)).counts
    closed = max(0, counts.done - done_before)  # on the fleet's branch, by every machine
    ending = events.COMPLETE if counts.open == 0 and counts.blocked == 0 else (
        events.BLOCKED if counts.open == 0 else "unfinished"
    )  # fmt: skip
    if ending == events.COMPLETE:
        found = final_reproof(the_fleet, env)
        say(f"fleet on `{the_fleet.slug}`: {found.summary()} on `{the_fleet.into}`")
        if not found.ok:
            ending = events.HALT_UNPROVEN
            counts = scan(loading.load(ws, the_fleet.slug)).counts
    records = _events(ws, the_fleet.slug)
    starts = [k for k, e in enumerate(records) if e.get("event") == events.FLEET_START]
    records = records[starts[-1] :] if starts else records  # this fleet's, not an earlier one's
    integrated = sum(1 for e in records if e.get("event") == events.INTEGRATED)
    reopened = sum(1 for e in records if e.get("event") == events.REOPENED)
    _log(the_fleet, events.FLEET_END, ending=ending, members=codes)
    where = f"{plural(integrated, 'step')} integrated"
    if the_fleet.coordinate is not None:
        where += f" here, {max(0, closed - integrated)} by other machines"
    say(
        f"fleet on `{the_fleet.slug}`: {ending}; {where}, {reopened} reopened, "
        f"{counts.open} open; member exits {codes}"
    )
    if ending != "unfinished":
        return events.EXIT_CODES[ending]
    return next((code for code in codes if code), LEFT_TO_A_PERSON)


def one_at_a_time(roadmap: Roadmap) -> str | None:
    """What to tell a person starting a fleet on a roadmap whose steps can only be worked one
    at a time, by its order and `needs:`; None when some can run side by side."""
    if side_by_side(roadmap) or not any(step.is_open for step in roadmap.steps):
        return None
    why = {
        "steps": "each step waits for the one before it",
        "phases": "each phase holds one step to run at a time",
        "free": "one step is ready at a time",
    }.get(roadmap.order, "one step is ready at a time")
    return (
        f"leaves nothing to run side by side ({why}): its steps are worked one at a time, "
        "whatever the number of agents; mark a step `[P]` to run it beside the one before, "
        "name what a step waits for with `<!-- needs: 1.2 -->`, or set "
        "`execution.fleet.order: phases` or `free`"
    )


def final_reproof(plan_: Fleet, env: Mapping[str, str]) -> Reproof:
    """Every ticked step's trusted verify line again on the fleet's branch as integrated (the
    receipts the branch carries count for the steps integrated elsewhere); what fails is
    reopened. The final record (and any reopening) is committed on the branch, so a fresh
    clone's `roadmap audit` reads the same proof; with a remote, on its tip (again on the new
    tip when another machine pushed first)."""
    main = Workspace(plan_.root)
    with _integration_lock(plan_):
        for _ in range(PUBLISH_TRIES):
            if plan_.coordinate is not None:
                _git(plan_.root, "fetch", "--quiet", plan_.coordinate, plan_.into)
                _git(plan_.root, "reset", "--quiet", "--hard", "FETCH_HEAD")
            found = reprove(
                main, plan_.slug, env, now=wall_clock(), changed=guarded(main, plan_.slug, env),
                branch=True,
            )  # fmt: skip
            _git(plan_.root, "add", "--force", "--", finals.shown(plan_.slug),
                 f"{ROADMAPS}/{plan_.slug}.md")  # fmt: skip
            if _git(plan_.root, "diff", "--cached", "--quiet", check=False).returncode == 0:
                return found
            _git(plan_.root, "commit", "--quiet", "--no-verify", "-m",
                 f"agentcfg: {plan_.slug}: the fleet's final re-proof")  # fmt: skip
            if _publish(plan_):
                return found
    raise IntegrationError(f"lost the race to push `{plan_.into}` {PUBLISH_TRIES} times")


def run_member(
    ws: Workspace, root: Path, slug: str, host: str, n: int, into: str | None,
    coordinate: str | None, ttl: float, drive: Callable[[Workspace, str], driver.Result],
    say: Callable[[str], None] = lambda line: None,
) -> int:  # fmt: skip
    """One member process: its loop, with the host run by the driver for each leased step."""
    main = Workspace(root)
    branch = into or _git(root, "symbolic-ref", "--short", "HEAD").stdout.strip()
    the_fleet = Fleet(root, main.canonical(slug), branch, host, coordinate, ttl)

    def work(member: Workspace, lease: Lease) -> tuple[str, int]:
        result = drive(member, lease.step)  # its re-proof at the end: the leased step only
        _member_run(the_fleet, n, lease.step, result)
        return result.ending, result.exit_code

    timeout = load_config(main, os.environ).verify_timeout
    return member_loop(the_fleet, ws, n, work, os.environ, timeout=timeout, say=say)


def _member_run(plan_: Fleet, n: int, step: str, result: driver.Result) -> None:
    """What the host's run on a leased step cost, in the fleet's own ledger: the member's
    ledger goes with its worktree, and `report` tells each member's part from this."""
    row = result.row or {}
    spent = row.get("tokens") or {}
    _log(
        plan_, events.MEMBER_RUN, member=n, step=step, ending=result.ending,
        session=result.session, engagements=row.get("engagements", 0),
        tokens={"total": spent.get("total")}, waits=len(row.get("timeline", {}).get("waits", [])),
        seconds=row.get("wall_seconds", 0.0),
    )  # fmt: skip


def _remove(plan_: Fleet, agents: int) -> None:
    for n in range(1, agents + 1):
        _git(plan_.root, "worktree", "remove", "--force", str(plan_.worktree(n)), check=False)
        _git(plan_.root, "branch", "-D", plan_.branch(n), check=False)
        if plan_.coordinate is not None:  # the remote's tip as the member last fetched it
            _git(plan_.root, "update-ref", "-d", f"refs/agentcfg/fetched/{plan_.slug}/{n}",
                 check=False)  # fmt: skip
    _git(plan_.root, "worktree", "prune", check=False)


def _events(ws: Workspace, slug: str) -> list[dict[str, object]]:
    found = []
    for line in state.ledger_lines(ws.state):
        with contextlib.suppress(ValueError):
            record = state.loads(line)
            if isinstance(record, dict) and record.get("slug") == slug:
                found.append(record)
    return found
