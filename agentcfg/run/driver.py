"""`agentcfg run`: start a host headless on a claimed roadmap, show each engagement as the
stop hook records it, and when the host process ends carry the run on (resume, wait for a
usage-limit reset or the window) until the run ends. The decisions are core.unattended's.
"""

from __future__ import annotations

import contextlib
import math
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentcfg import checkpoints, claims, controls, loading, state
from agentcfg.contract import finals, trust
from agentcfg.contract.reprove import Reproof, guarded, reprove
from agentcfg.core import events, quota
from agentcfg.core import report as reports
from agentcfg.core.evidence import summary
from agentcfg.core.ladder import MAX_ITERATIONS, TAMPERED
from agentcfg.core.roadmap import Roadmap, scan
from agentcfg.core.texts import continuation, plural
from agentcfg.core.times import iso
from agentcfg.core.visible import visible
from agentcfg.errors import AgentcfgError, ClaimError, StateError
from agentcfg.fleet.membership import read_membership
from agentcfg.hosts import registry, windows
from agentcfg.hosts.base import Refused
from agentcfg.hosts.defaults import settings_hook
from agentcfg.hosts.stream import outcome, reply
from agentcfg.paths import DRIVERS, LEDGER_NAME, RUN_HOST_ENV
from agentcfg.run import model as plan
from agentcfg.run.runners import Plain, Runner, Watchdog, end_group, kill_group
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.hosts.protocols import Host, Launcher, Wiring

OUTPUT_KEPT = 256 * 1024  # bytes of each host stream kept for the limit check and the relay
POLL = 0.25  # seconds between looks at the ledger while the host runs
READ_LIMIT = 4 * 1024 * 1024  # ledger bytes read per look
LINE_KEPT = 8 * 1024 * 1024  # bytes of one line of the host's records read; a longer one is cut
TAIL_WAIT = 2.0  # seconds the host's output may stay open once its group has ended


class Terminated(KeyboardInterrupt):
    """SIGTERM at the driver (a CI job cancelled): it ends the run as Ctrl-C does."""


def on_sigterm(signum: int, frame: object) -> None:
    raise Terminated


class Clock(Protocol):
    """Time as the driver sees it and how it waits; tests pass one that does not wait."""

    def now(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Request:
    slug: str
    host: str
    policy: plan.Policy
    extra: tuple[str, ...] = ()
    force: bool = False
    fresh_per_step: bool = False  # each step in a new session, seeded with a relay note
    step: str | None = None  # a fleet member's leased step: the only one its run answers for
    rollback_on_halt: bool = False  # a halt mid-step rolls the workspace back to its checkpoint
    others: tuple[str, ...] = ()  # the hosts the run carries on with when `host` is paused
    others_args: tuple[tuple[str, ...], ...] = ()  # each other host's own arguments


@dataclass
class Result:
    ending: str
    exit_code: int
    slug: str
    host: str
    session: str | None
    progress: plan.Progress
    closed: int  # steps closed while the driver ran
    row: dict[str, Any] | None  # the run as `report --json` gives it
    reproof: Reproof | None = None  # the last re-proof the driver ran, if any
    told: Told | None = None  # what the host refused or failed, and what the person runs next
    rollback: checkpoints.Rollback | None = None  # what --rollback-on-halt undid
    failovers: int = 0  # times another listed host took the run over

    def to_json(self) -> dict[str, Any]:
        return {
            "ending": self.ending,
            "exit_code": self.exit_code,
            "slug": self.slug,
            "host": self.host,
            "session": self.session,
            "starts": self.progress.starts,
            "restarts": self.progress.restarts,
            "failovers": self.failovers,
            "steps_closed": self.closed,
            "reproof": None
            if self.reproof is None
            else {
                "passed": list(self.reproof.passed),
                "failed": [list(f) for f in self.reproof.failed],
                "reopened": list(self.reproof.reopened),
                "seconds": round(self.reproof.seconds, 3),
            },
            "run": self.row,
            **(self.told or Told()).to_json(),
            "rollback": None
            if self.rollback is None
            else {
                "step": self.rollback.checkpoint.step,
                "checkpoint": self.rollback.checkpoint.ref,
                "attempt": self.rollback.attempt,
                "reopened": list(self.rollback.reopened),
            },
        }


@dataclass(frozen=True)
class Told:
    """What an ending tells beyond its numbers: the tool calls the host refused for lack of
    permission (and how to allow them), its last failed ones, settings the host said it
    ignored, and the command the person runs next."""

    denied: tuple[str, ...] = ()
    allow: str = ""
    failed: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    next: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "permissions": None
            if not self.denied
            else {"refused": len(self.denied), "example": self.denied[-1], "allow": self.allow},
            "last_failed": list(self.failed),
            "ignored_settings": list(self.ignored),
            "next": self.next,
        }

    def lines(self, title: str) -> list[str]:
        """The ending's lines after its numbers, each shown escaped."""
        found = []
        if self.denied:
            found.append(
                f"permissions: {title} refused {plural(len(self.denied), 'tool call')} of the "
                f"agent for lack of permission (e.g. `{self.denied[-1]}`); to allow them, "
                f"{self.allow}"
            )
        found += [f"{title} said: {line}" for line in self.ignored]
        found += [f"last failed: `{command}`" for command in self.failed]
        return [visible(line) for line in found]


@dataclass(frozen=True)
class Prepared:
    host: Host
    binary: str
    slug: str
    roadmap: Roadmap
    warnings: tuple[str, ...] = ()  # what will keep the agent's commands from running
    others: tuple[tuple[Host, str], ...] = ()  # each other listed host, with its program


def prepare(
    ws: Workspace, request: Request, env: Mapping[str, str], home: Path, hook: bool = True
) -> Prepared:
    """Everything checked before anything starts; AgentcfgError with one line otherwise.
    Without `hook`, whether the stop hook is installed here is not asked (a fleet installs it
    in each member's worktree)."""
    names = (request.host, *request.others)
    if len(set(names)) < len(names):
        raise AgentcfgError(f"--host {','.join(names)} names a host twice")
    host, binary = _runnable(request.host, env)
    others = tuple(_runnable(name, env) for name in request.others)
    roadmap = loading.load(ws, request.slug)
    slug = ws.canonical(request.slug)
    if not roadmap.autonomous:
        errors = sum(problem.level == "error" for problem in roadmap.problems)
        raise AgentcfgError(
            f"roadmap `{slug}` is not autonomous: set `execution: {{mode: autonomous}}` in its "
            "frontmatter to run it unattended"
            + (
                f"; `agentcfg roadmap lint {slug}` finds {plural(errors, 'error')}"
                if errors
                else ""
            )
        )
    stopped = controls.read_stop(ws, slug)
    if stopped is not None:
        raise ClaimError(
            f"roadmap `{slug}` was stopped by {stopped.by} at {iso(stopped.stopped_at)}: "
            f"`agentcfg resume {slug}` first"
        )
    for each in (host, *(other for other, _ in others)) if hook else ():
        hooked = settings_hook(each, ws.root, home, env)
        if hooked is None and each.plugin(ws.root, home, env) is None:
            raise AgentcfgError(
                f"the stop hook is not installed for {each.TITLE}: run "
                f"`agentcfg hooks install --host {each.NAME}` first"
            )
        if hooked is not None:
            refuse_unread(each, hooked, ws.root, home, env)
    refuse_untrusted(ws, slug, roadmap, env)
    warnings = host.asks(ws.root, home, env, request.extra)
    extras = request.others_args or [()] * len(others)
    for (other, _binary), args in zip(others, extras, strict=True):
        warnings = [*warnings, *other.asks(ws.root, home, env, args)]
    return Prepared(host, binary, slug, roadmap, tuple(warnings), others)


def _runnable(name: str, env: Mapping[str, str]) -> tuple[Host, str]:
    """The host of that name and its program, when `run` can start it headless."""
    try:
        host = registry.adapter(name)
    except KeyError:
        names = ", ".join(sorted(registry.HOSTS))
        raise AgentcfgError(f"unknown host {name!r} (one of: {names})") from None
    if host.headless("", None, False, ()) is None:
        able = ", ".join(runnable_hosts())
        raise AgentcfgError(f"{host.TITLE} cannot be run unattended yet (hosts that can: {able})")
    binary = shutil.which(host.BINARY, path=env.get("PATH", os.defpath))
    if binary is None:
        raise AgentcfgError(
            f"cannot find {host.TITLE}'s program `{host.BINARY}` on PATH: install it first"
        )
    return host, binary


def refuse_unread(host: Wiring, path: Path, root: Path, home: Path, env: Mapping[str, str]) -> None:
    """AgentcfgError when the host will not run the stop hook `path` holds (hooks switched
    off, a folder or a hook the host does not trust): the run would go on with nobody to
    carry it, as `doctor` would say."""
    for finding in host.checks(path, root, home, env):
        if finding.level == "error":
            raise AgentcfgError(
                f"{host.TITLE} will not run the stop hook in {path}: {finding.message}"
                + (f"; fix: {finding.fix}" if finding.fix else "")
            )


def refuse_untrusted(ws: Workspace, slug: str, roadmap: Roadmap, env: Mapping[str, str]) -> None:
    """AgentcfgError when an open step's verify line is one no person trusted as it reads: the
    agent could never close that step, and the run would only stall."""
    known = trust.trusted_lines(ws, slug, env)
    untrusted = [
        s.id
        for s in roadmap.steps
        if s.is_open and s.verify and known.get(s.id) != trust.digest(s.verify)
    ]
    if untrusted:
        shown = ", ".join(untrusted[:5]) + (", ..." if len(untrusted) > 5 else "")
        which = "that step" if len(untrusted) == 1 else "those steps"
        raise AgentcfgError(
            f"roadmap `{slug}` has {plural(len(untrusted), 'verify line')} nobody trusted "
            f"(step {shown}): no agent can close {which}; review and trust them first: "
            f"agentcfg roadmap trust {slug}"
        )


def _drivable(host: Launcher) -> bool:
    return host.headless("", None, False, ()) is not None


def runnable_hosts() -> tuple[str, ...]:
    """The names of the hosts `agentcfg run` can start headless, sorted."""
    return tuple(n for n in sorted(registry.HOSTS) if _drivable(registry.adapter(n)))


@dataclass
class _Session:
    """The host session the run lives in, and how its claim was made."""

    session: str | None = None  # None until a pending claim is adopted
    token: str | None = None  # the pending claim's token, shown in the first prompt
    named: bool = False  # the claim was made by an id the start names its session with
    driver: str = ""  # the run's id across its sessions: `report` shows them as one run
    carried: Any = None  # the run state a failover carries in, until the claim is bound

    @property
    def key(self) -> str | None:
        return None if self.session is None else claims.session_key(self.session)

    @property
    def pending(self) -> str | None:
        """How the ledger names the pending claim: a digest, never the token itself."""
        return None if self.token is None else claims.pending_name(self.token).removesuffix(".json")


@dataclass
class _Ran:
    """One host process, as it ended."""

    code: int | None
    stdout: str
    stderr: str
    events: list[dict[str, Any]] = field(default_factory=list)  # ledger events while it ran
    moved_on: bool = False  # ended by the driver when the hook moved it on to the next step
    deadline: bool = False  # ended by the driver at --until
    heard: list[Any] = field(default_factory=list)  # the host's records, as its `hear` reads them
    readings: list[quota.Reading] = field(default_factory=list)  # usage windows it showed
    reserved: bool = False  # ended by the driver at a turn end: a window reached the reserve


def drive(
    ws: Workspace,
    request: Request,
    ready: Prepared,
    env: Mapping[str, str],
    clock: Clock,
    say: Callable[[str], None],
) -> Result:
    """The whole run: claim, start, watch, decide, until an ending; Ctrl-C ends it cleanly."""
    return _Driver(ws, request, ready, env, clock, say).drive()


@dataclass
class _Seat:
    """One host the run can carry on with: how it starts, its arguments, the usage windows it
    last showed, and when its own pause (a usage limit, the reserve) ends."""

    host: Launcher
    runner: Runner
    extra: tuple[str, ...]
    windows: dict[str, quota.Reading] = field(default_factory=dict)
    paused_until: float = 0.0


class _Driver:
    def __init__(
        self,
        ws: Workspace,
        request: Request,
        ready: Prepared,
        env: Mapping[str, str],
        clock: Clock,
        say: Callable[[str], None],
    ) -> None:
        self.ws, self.request, self.ready, self.env = ws, request, ready, env
        self.clock, self.say = clock, say
        self.slug = ready.slug
        self.open_at_start = scan(ready.roadmap).counts.open
        self.progress = plan.Progress()
        self.current = _Session(driver=secrets.token_hex(6))
        self.reproof: Reproof | None = None  # the last re-proof this process ran
        self.denied: list[str] = []  # every tool call the host refused in the run
        self.failed: tuple[str, ...] = ()  # the last failed ones
        self.ignored: dict[str, None] = {}  # the host's words on settings it ignored
        self.env = {**env, RUN_HOST_ENV: request.host}  # the hook tells endings as this run's
        listed = [(ready.host, ready.binary, request.extra)]
        listed += [
            (host, binary, args)
            for (host, binary), args in zip(
                ready.others, request.others_args or [()] * len(ready.others), strict=True
            )
        ]
        self.seats = [self._seat(host, binary, extra) for host, binary, extra in listed]
        self.seat = self.seats[0]
        self.failovers = 0
        self.ran: _Ran | None = None  # the host process last started, as it ended
        self.ended: plan.Ended | None = None  # how the driver read it
        self.started = clock.now()  # the run's start, as the engagement lines count it

    def _seat(self, host: Launcher, binary: str, extra: tuple[str, ...]) -> _Seat:
        made = host.runner(binary, self.ws.root, self.env)
        runner: Runner = Plain(host, binary) if made is None else made
        if self.request.policy.reserve is not None:
            extra = windows.with_windows(host.NAME, extra)
        return _Seat(host, runner, extra)

    @property
    def host(self) -> Launcher:
        return self.seat.host

    @property
    def runner(self) -> Runner:
        return self.seat.runner

    def drive(self) -> Result:
        """Carry the run to its ending; Ctrl-C (or SIGTERM) ends it as `interrupted`. What the
        runners started for the run ends before the ending is told."""
        try:
            with contextlib.ExitStack() as entered:
                for seat in self.seats:
                    entered.enter_context(seat.runner)
                return self._drive()
        except KeyboardInterrupt as stop:
            by = "signal" if isinstance(stop, Terminated) else controls.TERMINAL
            return self.finish(plan.finish(events.INTERRUPTED), by=by)

    def _drive(self) -> Result:
        """Claim the roadmap, then carry out each decision the model returns until an ending."""
        clock = self.clock
        force = self.request.force or _take_back(self.ws, self.slug, clock.now(), self.say)
        self.current = _claim(self.ws, self.runner, self.slug, force, clock.now(), self.current)
        action = plan.first(clock.now(), self.request.policy)
        self.started = clock.now()
        while action.kind != "finish":
            action = self._step(action)
        return self.finish(action)

    def _step(self, action: plan.Action) -> plan.Action:
        """Carry out one decision (a re-proof, a wait, a start of the host): the next one."""
        if action.kind == "reprove":
            return self._reproved(action)
        policy, clock = self.request.policy, self.clock
        action = self._failover(plan.held(self.seat.windows.values(), clock.now(), policy, action))
        if action.kind == "finish":
            return action
        if action.at > clock.now():
            stopped = _wait(self.ws, self.slug, self.current, action, clock, self.say)
            if stopped is not None:
                return stopped
            action = plan.held(self.seat.windows.values(), clock.now(), policy, action)
            action = plan.schedule(action, policy)
            if action.kind == "finish" or action.at > clock.now():
                return action
        return self._ended(self._start(action))

    def _start(self, action: plan.Action) -> _Ran:
        """Start the host as `action` says, in the run's session or a new one, and run it to
        its end."""
        slug, clock = self.slug, self.clock
        if self.ran is not None and (not action.resume or not self.current.session):
            # a new session (or a pending claim never bound): a claim of its own; after a
            # failover the same run goes on: its counts and budgets (read before the new
            # claim takes the roadmap over from the session left)
            left = self.current
            carried = _run_state(self.ws, left) or left.carried
            self.current = _claim(self.ws, self.runner, slug, True, clock.now(), left)
            if action.reason == "failover":
                self.current.carried = carried
                _carry(self.ws, self.current)
        _held(self.ws, self.current)
        self.progress = plan.advance(self.progress, action, self.ended)
        argv = _argv(self.ws, self.runner, self.seat.extra, slug, self.current, action, self.ran)
        counts = scan(loading.load(self.ws, slug)).counts
        _record(
            self.ws, events.RUN_START if self.progress.starts == 1 else events.RUN_RESUME,
            self.current, slug, clock, open=counts.open, blocked=counts.blocked,
            host=self.host.NAME, session=self.current.session, pending=self.current.pending,
            attempt=self.progress.starts,
            reason=action.reason, same_session=action.resume and bool(self.current.session),
            **({"one_step": True} if self.request.fresh_per_step else {}),
        )  # fmt: skip
        self.say(
            plan.start_line(
                self.host.NAME, slug, self.current.session, action, self.progress.restarts
            )
        )
        self._checkpoint(first=self.progress.starts == 1)
        self.ran = _run(
            self.ws, argv, self.env, self.current, slug, clock, self.say, self.started,
            self.request.fresh_per_step, self.runner, self.request.policy.until, self._reserve(),
        )  # fmt: skip
        return self.ran

    def _ended(self, ran: _Ran) -> plan.Action:
        """How the host process ended, read as a value from the run's state, the ledger's
        events and the host's output; the model's decision on it."""
        self.seat.windows = quota.latest(self.seat.windows, ran.readings)
        _adopted(self.ws, self.current, ran.events)
        self._keep(self.host.refusals(ran.stdout, ran.stderr), ran.heard)
        self.denied += self.runner.refused()  # those refused unseen, with no run attached
        ending = _ending(self.ws, self.slug, self.current, ran.events)
        now = self.clock.now()
        finished = ending is None and self._nothing_open()
        open_work = ending is None and not finished and not ran.deadline
        self.ended = plan.Ended(
            code=ran.code,
            ending=ending,
            reset_at=(
                _reset(
                    self.runner, ran.stdout + "\n" + ran.stderr, now, self.current.session, ran.code
                )
                if open_work
                else None
            ),
            progressed=plan.progressed(ran.events),
            next_step=ran.moved_on,
            quota=self._spent() if open_work and not ran.moved_on else None,
            deadline=ran.deadline,
            finished=finished,
        )
        return plan.after_host(self.progress, self.ended, now, self.request.policy)

    def _reproved(self, action: plan.Action) -> plan.Action:
        """Run the re-proof a complete run needs; the model's decision on what it found."""
        before = self.reproof
        self.reproof = self._reprove()
        after = plan.reproved(
            self.progress, self.reproof.failed, None if before is None else before.failed,
            action.recorded, self.clock.now(), self.request.policy,
        )  # fmt: skip
        if after.kind == "start":  # the host carries the run on: it closed steps first
            code = None if self.ran is None else self.ran.code
            self.ended = plan.Ended(code=code, ending=None, progressed=True)
        return after

    def _failover(self, action: plan.Action) -> plan.Action:
        """A wait for the current host's limit or reserve, or a start at once on another listed
        host that is not paused itself (`run-failover`)."""
        if action.kind != "start" or action.pause not in plan.LIMIT_PAUSES:
            return action
        now = self.clock.now()
        self.seat.paused_until = plan.paused_until(action, self.request.policy)
        names = [seat.host.NAME for seat in self.seats]
        free = {seat.host.NAME: seat.paused_until for seat in self.seats}
        other = plan.failover(action, self.host.NAME, names, free, now)
        if other is None:
            return action
        was = self.seat
        self.seat = self.seats[names.index(other)]
        self.failovers += 1
        _record(
            self.ws, events.RUN_FAILOVER, self.current, self.slug, self.clock, **{"from": was.host.NAME},
            to=other, reason=action.pause, paused_until=iso(was.paused_until),
        )  # fmt: skip
        self.say(plan.failover_line(was.host.NAME, other, action.pause, was.paused_until, now))
        return plan.Action("start", at=now, resume=False, reason="failover")

    def _reserve(self) -> _Reserve | None:
        """What the start watches for the person's reserve; None without one, or on a host
        that shows no windows."""
        reserve = self.request.policy.reserve
        reader = windows.READERS.get(self.host.NAME)
        if reserve is None or reader is None:
            return None
        return _Reserve(
            reader, reserve, self.request.policy.quota_margin, dict(self.seat.windows), self.ws,
            self.current, self.clock, self.env, windows.FILES.get(self.host.NAME),
        )  # fmt: skip

    def _spent(self) -> quota.Reading | None:
        """The window that ate into the reserve, as the host last showed its windows."""
        policy = self.request.policy
        if policy.reserve is None:
            return None
        return quota.spent(
            self.seat.windows.values(), policy.reserve, self.clock.now(), policy.quota_margin
        )

    def _keep(self, refused: Refused, heard: list[Any]) -> None:
        if heard:  # read as they came: whole, however long the output the kept tail cut
            found = outcome(heard)
            refused = Refused(found.denied, found.failed, refused.ignored)
        self.denied += refused.denied
        self.failed = (*self.failed, *refused.failed)[-3:]
        self.ignored.update(dict.fromkeys(refused.ignored))

    def _checkpoint(self, first: bool) -> None:
        """The workspace kept before the host starts on a step: always at the run's first
        start, later only when the step changed (the hook takes one at each step it engages)."""
        try:
            roadmap = loading.load(self.ws, self.slug)
        except AgentcfgError:
            return
        upcoming = scan(roadmap).next
        step = self.request.step or (upcoming.id if upcoming is not None else None)
        if step is not None:
            checkpoints.before_step(
                self.ws, self.slug, step, self.current.key, self.clock.now(), self.env,
                budget=checkpoints.COMMAND_BUDGET, again=first,
            )  # fmt: skip

    def _nothing_open(self) -> bool:
        """No step the run answers for is open in the roadmap as it is now (a member's: its
        leased step)."""
        try:
            roadmap = loading.load(self.ws, self.slug)
        except AgentcfgError:
            return False
        wanted = self.request.step
        return not any(s.mark == "open" for s in roadmap.steps if wanted is None or s.id == wanted)

    def _reprove(self) -> Reproof:
        """Every contracted step's trusted verify line again on the tree as it is (a fleet
        member's: its leased step, the final record left to the fleet)."""
        only = None if self.request.step is None else frozenset((self.request.step,))
        return reprove(
            self.ws, self.slug, self.env, now=self.clock.now(), only=only, record=only is None,
            changed=guarded(self.ws, self.slug, self.env), key=self.current.key,
        )  # fmt: skip

    def finish(self, action: plan.Action, by: str | None = None) -> Result:
        """Record an ending the driver decided (the hook records its own); report the run."""
        ending = action.ending or events.COMPLETE
        slug, progress = self.slug, self.progress
        evidence = _evidence(self.ws, slug, self.env) if ending == events.COMPLETE else ("", {})
        if not action.recorded:
            fields: dict[str, Any] = {"starts": progress.starts, "restarts": progress.restarts}
            if ending == events.COMPLETE:
                fields["evidence"], fields["words"] = evidence
            if by is not None:
                fields["by"] = by
            if ending == events.STOPPED:
                found = controls.read_stop(self.ws, slug)
                fields["by"] = found.by if found else None
            _record(self.ws, ending, self.current, slug, self.clock, **fields)
        undone = self._rollback(ending)  # before the count: the steps it opened again count
        row = _row(self.ws, self.slug, self.current)
        step = self.request.step
        try:
            now_open = [s for s in loading.load(self.ws, slug).steps if s.is_open]
            closed = max(0, self.open_at_start - len(now_open))
            if step is not None:  # a member's run closes its leased step, or none
                closed = int(all(s.id != step for s in now_open))
        except AgentcfgError:
            closed = 0
        summary = self.reproof.summary() if self.reproof is not None else None
        self.say(
            plan.ending_text(ending, action.exit_code, slug, closed, row, progress, summary, step)
        )
        for line in _told(self.ws, self.current, ending):
            self.say(f"  {line}")
        told = self._told(ending)
        for line in told.lines(self.host.TITLE):
            self.say(f"  {line}")
        if isinstance(undone, str):
            self.say(f"  not rolled back: {undone}")
        elif undone is not None:
            for line in rolled_back_lines(slug, undone):
                self.say(f"  {line}")
        if told.next:
            self.say(f"  next: {visible(told.next)}")
        if ending == events.COMPLETE:
            self.say(f"  evidence: {evidence[0]}")
        return Result(
            ending, action.exit_code, slug, self.host.NAME, self.current.session, progress,
            closed, row, self.reproof, told,
            undone if isinstance(undone, checkpoints.Rollback) else None, self.failovers,
        )  # fmt: skip

    def _told(self, ending: str) -> Told:
        """What the ending tells: refusals and failures seen, and the person's next command."""
        stalled = ending in ROLLBACK_ON
        again = f"agentcfg run {self.slug} --host {self.request.host}"
        if self.denied:
            allowing = " ".join(self.host.ALLOW_ARGS)
            after = f"{again} -- {allowing}" if allowing else again
            nxt: str | None = f"allow the agent's commands, then: {after}"
        elif ending in NEXT:
            nxt = NEXT[ending].format(slug=self.slug)
        elif ending in AGAIN:
            nxt = AGAIN[ending].format(slug=self.slug, again=again)
        else:
            nxt = None
        return Told(
            tuple(self.denied), self.host.ALLOW, self.failed if stalled else (),
            tuple(self.ignored), nxt,
        )  # fmt: skip

    def _rollback(self, ending: str) -> checkpoints.Rollback | str | None:
        """With --rollback-on-halt, a halt mid-step brings the workspace back to the checkpoint
        before the step the run was on; why not, when it cannot."""
        if not self.request.rollback_on_halt or ending not in ROLLBACK_ON:
            return None
        step = checkpoints.last_step(self.ws, self.slug)
        if step is None:
            return "no checkpoint was taken in this run"
        try:
            return checkpoints.rollback(
                self.ws, self.slug, step, self.clock.now(), self.env, by="run"
            )
        except AgentcfgError as exc:
            return str(exc)


def _claim(
    ws: Workspace, runner: Runner, slug: str, force: bool, now: float, before: _Session
) -> _Session:
    """Claim the roadmap for the session about to start: by its id where the runner knows it
    first, else a pending claim the first prompt's token binds. The run's id carries over."""
    session = runner.new_session()
    if session is not None:
        controls.claim(ws, session, slug, now=now, force=force)
        return _Session(session, named=True, driver=before.driver)
    pending = controls.claim_pending(ws, slug, now=now, force=force)
    return _Session(None, pending.token, driver=before.driver)


def _started(pid: int) -> str | None:
    """When process `pid` started, in the kernel's clock ticks since boot (None: no such
    process, or no /proc to ask): a pid the system gave to a new process starts later."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = stat.rpartition(b")")[2].split()
    return fields[19].decode() if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    """The process is still there: the same pid, started at the same moment."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process holds the pid: not ours, but not proof either way
    now = _started(pid)
    return now is None or started is None or now == started


def _held(ws: Workspace, current: _Session) -> None:
    """Record this process as the driver of the session's claim (by its key, once bound)."""
    name = current.key or current.pending
    if name is None:
        return
    pid = os.getpid()
    state.write_json(ws.state / DRIVERS / f"{name}.json", {"pid": pid, "started": _started(pid)})


def _driver_gone(ws: Workspace, names: list[str]) -> int | None:
    """The pid of the gone `agentcfg run` that held a claim under one of `names` (its key or
    its pending name); None when no driver held it, or its driver still runs."""
    for name in names:
        data = state.read_json(ws.state / DRIVERS / f"{name}.json")
        pid = data.get("pid") if data is not None else None
        if type(pid) is int and pid > 0:
            started = data.get("started") if data is not None else None
            return None if _alive(pid, started if isinstance(started, str) else None) else pid
    return None


def _take_back(ws: Workspace, slug: str, now: float, say: Callable[[str], None]) -> bool:
    """Whether every live claim on `slug` is held for a driver that is gone (an `agentcfg run`
    that halted, was stopped or was killed): then the person's own run takes it back without
    --force. A claim a live driver, or an agent's own session, holds still needs --force."""
    held = [
        c
        for c in claims.all_claims(ws)
        if c.slug == slug and now - c.claimed_at < claims.PEER_WINDOW
    ]
    gone = [(c, _driver_gone(ws, [c.key, *_pending_names(ws, c.key)])) for c in held]
    if not held or any(pid is None for _c, pid in gone):
        return False
    for found, pid in gone:
        say(
            f"agentcfg run: taking back roadmap `{slug}` from session {visible(found.session_id)}: "
            f"the `agentcfg run` that held it (pid {pid}) is gone"
        )
    return True


def _pending_names(ws: Workspace, key: str) -> list[str]:
    """The pending names a claim was bound from (a host that names its own sessions)."""
    found = []
    for line in state.ledger_lines(ws.state):
        if b'"claimed"' in line and key.encode() in line:
            event = _load(line)
            if event.get("run") == key and isinstance(event.get("pending"), str):
                found.append(event["pending"])
    return found


def _prompt(ws: Workspace, slug: str, current: _Session) -> str:
    """The continuation of the run as it stands, with the pending claim's token if any."""
    roadmap = loading.load(ws, slug)
    found = scan(roadmap)
    run = _run_state(ws, current)
    upcoming = found.next
    member = read_membership(ws, slug)
    if member is not None:  # a fleet member works the step it leases, never another
        upcoming = next((s for s in roadmap.steps if s.id == member.step), upcoming)
    text = continuation(
        slug,
        found.counts.open,
        found.counts.blocked,
        upcoming,
        run.iterations if run else 0,
        _cap(ws, current),
        reopened=() if member is not None else finals.reopened(ws, slug, roadmap),
    )
    if current.token and not current.session:
        text += f"\n(This session's claim on the roadmap: {current.token}.)"
    return text


def _argv(
    ws: Workspace,
    runner: Runner,
    extra: tuple[str, ...],
    slug: str,
    current: _Session,
    action: plan.Action,
    ran: _Ran | None,
) -> list[str]:
    prompt = _prompt(ws, slug, current)
    if action.resume and current.session:
        args = runner.argv(prompt, current.session, True, extra)
        if args is not None:
            return args
    if action.reason != "start":  # a new session carries the run on: told where things are
        prompt = plan.relay_note(
            slug,
            action.reason,
            _status(loading.load(ws, slug)),
            _receipts(ws, slug),
            reply(ran.stdout) if ran else "",
            prompt,
        )
    args = runner.argv(prompt, current.session if current.named else None, False, extra)
    assert args is not None  # prepare() refused a host that cannot start headless
    return args


def _status(roadmap: Roadmap) -> str:
    counts = scan(roadmap).counts
    return (
        f"{plural(counts.open, 'open step')}, {counts.done} done"
        + (f", {counts.blocked} blocked" if counts.blocked else "")
        + (f", {counts.deferred} deferred" if counts.deferred else "")
    )


def _receipts(ws: Workspace, slug: str) -> list[str]:
    """The latest `verified` events of the roadmap, as short lines."""
    found: list[str] = []
    for line in state.ledger_lines(ws.state):
        if b'"verified"' not in line:
            continue
        event = _load(line)
        if event.get("event") == events.VERIFIED and event.get("slug") == slug:
            found.append(
                f"{event.get('step')} passed at {event.get('at')}"
                + (f" (`{event['command']}`)" if isinstance(event.get("command"), str) else "")
            )
    return found[-5:]


def _run(
    ws: Workspace,
    argv: list[str],
    env: Mapping[str, str],
    current: _Session,
    slug: str,
    clock: Clock,
    say: Callable[[str], None],
    started: float,
    fresh: bool,
    runner: Runner,
    until: float | None = None,
    reserve: _Reserve | None = None,
) -> _Ran:
    """Run the host to its end in a process group of its own, printing each engagement the
    ledger records meanwhile; Ctrl-C ends the whole group before it propagates (a second one
    at once), and a watchdog ends it if the driver dies first. The start is over once the
    process has exited and the runner says the session settled. `fresh`: once a step is
    closed and the hook engages the session on the next, the host is ended there. `until`:
    at that moment the host is ended, however busy or hung. `reserve`: once a window the host
    shows reaches the person's reserve, the run is asked to end at its next turn end."""
    watch = _Watch(ws, slug, current, clock, say, started, _ledger_size(ws))
    proc = subprocess.Popen(
        argv,
        cwd=ws.root,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    watchdog: Watchdog | None = None
    streams: list[_Tail] = []
    try:  # from the start: a Ctrl-C at any point ends what was started
        watchdog = Watchdog(proc.pid)
        shown = None if reserve is None or reserve.locate else reserve.seen
        streams = [_Tail(proc.stdout, runner.hear, shown), _Tail(proc.stderr)]
        _watch(proc, watch, runner, fresh, until, reserve)
    except KeyboardInterrupt:
        end_group(proc)
        watch.follow(_cap(ws, current))
        raise
    finally:
        kill_group(proc)  # nothing the host started outlives it
        if watchdog is not None:
            watchdog.release()
        for tail in streams:  # a process that left the group may hold the output open
            tail.join(TAIL_WAIT)
        if reserve is not None:
            reserve.follow()  # what the session's file gained since the last look
            reserve.done()
    code = proc.returncode
    return _Ran(
        code if code >= 0 else None, streams[0].text(), streams[1].text(), watch.records,
        watch.moved_on, watch.deadline, streams[0].heard,
        [] if reserve is None else list(reserve.readings), reserve is not None and reserve.asked,
    )  # fmt: skip


@dataclass
class _Watch:
    """What a start reads of the ledger while the host runs: the roadmap's new events (each
    engagement of the run printed as it comes), and why the driver ended the host, if it did."""

    ws: Workspace
    slug: str
    current: _Session
    clock: Clock
    say: Callable[[str], None]
    started: float
    offset: int  # where the ledger's next line starts
    records: list[dict[str, Any]] = field(default_factory=list)
    moved_on: bool = False  # ended once the hook moved the session on to the next step
    deadline: bool = False  # ended at --until

    def follow(self, cap: int) -> None:
        elapsed = self.clock.now() - self.started
        self.offset = _follow(
            self.ws, self.offset, self.records, self.slug, self.current, self.say, elapsed, cap
        )


def _watch(
    proc: subprocess.Popen[bytes],
    watch: _Watch,
    runner: Runner,
    fresh: bool,
    until: float | None,
    reserve: _Reserve | None,
) -> None:
    """Look at the ledger until the host has exited and the runner says its session settled;
    end the host at `until`, or (`fresh`) once the hook engaged the session on the next step."""
    current = watch.current
    cap = _cap(watch.ws, current)
    while True:
        exited = proc.poll() is not None
        watch.follow(cap)
        if exited and runner.settled(
            current.session, _ending(watch.ws, watch.slug, current, watch.records) is not None
        ):
            return
        due = not watch.deadline and until is not None and watch.clock.now() >= until
        moved = (
            not due and fresh and not watch.moved_on and plan.moved_on(watch.records, current.key)
        )
        if due or moved:
            end_group(proc)
            runner.interrupt(current.session)
            watch.deadline, watch.moved_on = watch.deadline or due, watch.moved_on or moved
            continue
        if reserve is not None:
            reserve.follow()
        time.sleep(POLL)


@dataclass
class _Reserve:
    """What a start watches for the person's reserve: the host's windows as its output shows
    them, line by line (on the thread reading it). Once one reaches the reserve, the run is
    asked to let its next turn end through: the host ends its start there by itself, and no
    request of the next turn reaches the model."""

    reader: windows.Reader
    reserve: float
    margin: float
    known: dict[str, quota.Reading]  # the windows as the host showed them before this start
    ws: Workspace
    current: _Session  # the run asked (once its claim is bound)
    clock: Clock
    env: Mapping[str, str]
    locate: windows.Locator | None = None  # the session's file the windows are read from;
    # None: they come on the start's stdout
    readings: list[quota.Reading] = field(default_factory=list)
    asked: bool = False
    source: Path | None = None
    offset: int = 0
    key: str | None = None  # the run an ask was left for

    def __post_init__(self) -> None:
        self.done()  # an ask a start before this one left behind

    def seen(self, line: bytes) -> None:
        found = self.reader(line)
        if not found:
            return
        self.readings.extend(found)
        shown = quota.latest(self.known, self.readings)
        key = self.current.key
        if self.asked or key is None:
            return
        if quota.spent(shown.values(), self.reserve, self.clock.now(), self.margin) is not None:
            self.asked, self.key = True, key
            try:
                controls.ask_yield(self.ws, key, "reserve", self.clock.now())
            except (OSError, StateError):  # unasked, the start ends as it would; the wait after
                self.asked = False

    def follow(self) -> None:
        """Read the new whole lines of the session's file (once the session is known; from
        where the file stood when it was found: what came before is another start's)."""
        if self.locate is None or self.current.session is None:
            return
        if self.source is None:
            self.source = self.locate(self.env, self.current.session)
            if self.source is None:
                return
            with contextlib.suppress(OSError):
                self.offset = 0 if not self.known else self.source.stat().st_size
        try:
            with self.source.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read(READ_LIMIT)
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            self.seen(line)
        self.offset += end

    def done(self) -> None:
        key = self.key or self.current.key
        if key is not None:
            controls.drop_yield(self.ws, key)


def _reset(
    runner: Runner, output: str, now: float, session: str | None, code: int | None
) -> float | None:
    """The runner's `limit_reset`, a reset no clock holds (not finite) read as none told."""
    found = runner.limit_reset(output, now, session, code)
    return found if found is None or math.isfinite(found) else now


class _Tail(threading.Thread):
    """Reads one stream of the host to its end, keeping its last OUTPUT_KEPT bytes; with a
    `hear`, each whole line as it comes goes through it into `heard` (the host's records,
    whatever the length of the output)."""

    def __init__(
        self,
        stream: Any,
        hear: Callable[[bytes], list[Any]] | None = None,
        shown: Callable[[bytes], None] | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.stream, self.kept, self.hear, self.shown = stream, b"", hear, shown
        self.heard: list[Any] = []
        self.start()

    def run(self) -> None:
        line = b""
        lines = self.hear is not None or self.shown is not None
        while chunk := self.stream.read1(65536):
            self.kept = (self.kept + chunk)[-OUTPUT_KEPT:]
            if lines:
                line += chunk
                *whole, line = line.split(b"\n")
                for each in whole:
                    self._line(each)
                line = line[-LINE_KEPT:] if len(line) > LINE_KEPT else line
        if lines and line:
            self._line(line)
        self.stream.close()

    def _line(self, line: bytes) -> None:
        if self.hear is not None:
            self.heard += self.hear(line)
        if self.shown is not None:  # the usage windows the line shows, for the reserve
            self.shown(line)

    def text(self) -> str:
        return self.kept.decode("utf-8", "replace")


def _ledger_size(ws: Workspace) -> int:
    try:
        return (ws.state / LEDGER_NAME).stat().st_size
    except OSError:
        return 0


def _follow(
    ws: Workspace,
    offset: int,
    records: list[dict[str, Any]],
    slug: str,
    current: _Session,
    say: Callable[[str], None],
    elapsed: float,
    cap: int,
) -> int:
    """Read the ledger's new complete lines of this roadmap into `records`; print engagements."""
    try:
        fd = os.open(ws.state / LEDGER_NAME, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return offset
    with os.fdopen(fd, "rb") as handle:
        handle.seek(offset)
        data = handle.read(READ_LIMIT)
    end = data.rfind(b"\n") + 1
    for line in data[:end].splitlines():
        event = _load(line)
        if event.get("slug") != slug:
            continue
        records.append(event)
        _adopted(ws, current, [event])
        if event.get("event") == events.ENGAGE and event.get("run") == current.key:
            say(plan.engagement_line(event, elapsed, cap))
    return offset + end


def _load(line: bytes) -> dict[str, Any]:
    try:
        value = state.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _adopted(ws: Workspace, current: _Session, records: list[dict[str, Any]]) -> None:
    """Learn the session a pending claim was bound to, from its `claimed` event."""
    if current.session or not current.token:
        return
    for event in records:
        if event.get("event") == events.CLAIMED and event.get("pending") == current.pending:
            key = event.get("run")
            claim = claims.read_claim(ws, key) if isinstance(key, str) else None
            if claim is not None:
                current.session = claim.session_id
                _carry(ws, current)


def _carry(ws: Workspace, current: _Session) -> None:
    """Once the session a failover started holds its claim (at once for a session named
    before it starts, else when its pending claim is bound), its run state counts the run's
    whole way: the iterations and tokens before it added, its start the run's start."""
    carried = current.carried
    claim = claims.read_claim(ws, current.key) if carried is not None and current.key else None
    if claim is None:
        return
    current.carried = None
    path = claims.run_path(ws, claim.key, claim.slug)
    with state.locked(path.with_suffix(".lock")):
        found, problem = claims.load_run(path)
        if found is None or problem:
            return
        tokens = (
            None
            if found.tokens is None and carried.tokens is None
            else ((found.tokens or 0) + (carried.tokens or 0))
        )
        claims.write_run(path, found._replace(
            iterations=found.iterations + carried.iterations, tokens=tokens,
            started_at=min(found.started_at, carried.started_at),
        ))  # fmt: skip


def _run_state(ws: Workspace, current: _Session) -> Any:
    claim = claims.read_claim(ws, current.key) if current.key else None
    return claims.read_run(ws, claim) if claim is not None else None


def _cap(ws: Workspace, current: _Session) -> int:
    claim = claims.read_claim(ws, current.key) if current.key else None
    if claim is not None and claim.max_iterations:
        return claim.max_iterations
    from agentcfg.config import load_config

    try:
        return load_config(ws, dict(os.environ)).max_iterations
    except AgentcfgError:
        return MAX_ITERATIONS


def _ending(
    ws: Workspace, slug: str, current: _Session, records: list[dict[str, Any]]
) -> str | None:
    """The run's ending as its state and the ledger tell it; None while work remains."""
    if controls.read_stop(ws, slug) is not None:
        return events.STOPPED
    if current.key is None:
        return None  # the claim was never bound: the session never reached a turn end
    claim = claims.read_claim(ws, current.key)
    if claim is None or claim.slug != slug:
        return events.RELEASED
    run = claims.read_run(ws, claim)
    if run is not None and run.halted:
        return run.halted
    if run is not None and run.ended:
        return run.ended
    if run is not None and run.paused:
        return events.PAUSED
    return plan.handed_back(records, current.key)


def _wait(
    ws: Workspace,
    slug: str,
    current: _Session,
    action: plan.Action,
    clock: Clock,
    say: Callable[[str], None],
) -> plan.Action | None:
    """Wait until the action's start time; the `stopped` ending if a person stops the roadmap
    meanwhile."""
    now = clock.now()
    fields: dict[str, Any] = {"resume_at": iso(action.at)}
    if action.pause == events.PAUSED_USAGE_LIMIT:
        fields["reset_at"] = iso(action.reset_at) if action.reset_at is not None else None
    if action.pause == events.PAUSED_QUOTA and action.quota is not None:
        reading = action.quota
        fields.update(
            window=reading.window,
            utilization=round(reading.utilization, 4),
            reset_at=iso(reading.reset_at) if reading.reset_at is not None else None,
        )
    _record(ws, action.pause or events.PAUSED_WINDOW, current, slug, clock, **fields)
    say(plan.pause_line(action, now))
    while (left := action.at - clock.now()) > 0:
        if controls.read_stop(ws, slug) is not None:
            return plan.finish(events.STOPPED)
        clock.sleep(min(1.0, left))
    return None


def _record(
    ws: Workspace, name: str, current: _Session, slug: str, clock: Clock, **fields: Any
) -> None:
    if current.driver:
        fields["driver"] = current.driver
    state.append_ledger(ws.state, state.event(name, clock.now(), current.key, slug, **fields))


# the halts that leave a step half done: --rollback-on-halt undoes its work
ROLLBACK_ON = frozenset({events.HALT_STALL, events.HALT_RESTARTS})


def rolled_back_lines(slug: str, undone: checkpoints.Rollback) -> list[str]:
    """The ending's lines for a rollback the run made itself."""
    from agentcfg.core.checkpoints import rolled_back

    found = undone.checkpoint
    return rolled_back(slug, found.step, found.ref, undone.attempt, undone.reopened)


# what the person runs next, after a halt the run's proofs or its records caused
NEXT = {
    events.HALT_CONTRACT_CHANGED: "undo the change, or accept it: agentcfg roadmap trust {slug}",
    events.HALT_CHECK_CHANGED: "undo the change, or review the checks: agentcfg roadmap trust {slug}",
    events.HALT_STATE_TAMPERED: "see which record failed its seal: agentcfg roadmap audit {slug}",
    events.HALT_UNPROVEN: "see what the re-proof failed: agentcfg roadmap audit {slug}",
}
# what the person runs to carry on after an ending with work left: the run takes its claim back
AGAIN = {
    events.HALT_STALL: "see what stalls it (agentcfg roadmap next {slug}), then: {again}",
    events.HALT_RESTARTS: "see why the host kept ending (agentcfg report), then: {again}",
    events.HALT_MAX_ITERATIONS: "{again} (a larger cap: ladder.max_iterations in agentcfg.yaml)",
    events.HALT_TOKEN_BUDGET: "{again} (a larger budget: ladder.max_tokens in agentcfg.yaml)",
    events.HALT_WALL_CLOCK: "{again} (a longer one: ladder.wall_clock in agentcfg.yaml)",
    events.HALT_UNTIL: "{again}",
    events.HALT_STATE_UNREADABLE: "{again}",
    events.HALT_ROADMAP_ABSENT: "restore roadmaps/{slug}.md, then: {again}",
    events.STOPPED: "agentcfg resume {slug}, then: {again}",
    events.INTERRUPTED: "{again}",
    events.PAUSED: "{again}",
}


def _told(ws: Workspace, current: _Session, ending: str) -> list[str]:
    """Why the hook halted the run, as its ledger event says: what changed in the contract or
    a check, or the record whose seal failed; each shown, never obeyed, on the terminal."""
    if ending not in (events.HALT_CONTRACT_CHANGED, events.HALT_CHECK_CHANGED, TAMPERED):
        return []
    if current.key is None:
        return []
    told: list[str] = []
    for line in state.ledger_lines(ws.state):
        event = _load(line)
        if event.get("run") != current.key or event.get("event") != ending:
            continue
        changes, record = event.get("changes"), event.get("record")
        told = [f"changed: {c}" for c in changes] if isinstance(changes, list) else []
        told += [f"failed its seal: {record}"] if isinstance(record, str) else []
    return [visible(line) for line in told]


def _evidence(ws: Workspace, slug: str, env: Mapping[str, str]) -> tuple[str, dict[str, int]]:
    """What the proofs of a complete run show: `3 steps, 2 red-green, 1 vacuous (1.2)`, and
    how many steps each word has."""
    from agentcfg.contract import audit

    try:
        rows = audit.audit(ws, slug, env).rows
    except AgentcfgError as exc:
        return f"unknown ({exc})", {}
    graded = [(r.step.name, r.evidence) for r in rows if r.evidence is not None]
    return summary(graded), dict(Counter(word for _name, word in graded))


def _row(ws: Workspace, slug: str, current: _Session) -> dict[str, Any] | None:
    """The run as `report --json` tells it: every session the driver ran it in."""
    if current.key is None:
        return None
    folder = reports.Folder(slug=slug)
    for line in state.ledger_lines(ws.state):
        folder.take(line)
    mine = folder.current(current.key, slug)
    folder.close()
    return None if mine is None else mine.to_json()
