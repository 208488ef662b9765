"""`agentcfg run`'s decisions and texts: how a host process ended and what the run's state says
in, what to do next out (finish, start the host again now or later). Pure: no clock, no I/O;
times are epoch seconds the caller passes in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from agentcfg.core import events, quota
from agentcfg.core.texts import plural
from agentcfg.core.times import format_duration, iso

# The exit code of each ending, by family: what a CI job or a script branches on (the table's)
EXIT_CODES = events.EXIT_CODES
UNKNOWN_ENDING = events.UNKNOWN_EXIT  # an ending the table does not know: the run did not complete

MAX_RESTARTS = 10
LIMIT_WAIT = 5 * 3600.0  # the longest wait for a usage limit whose reset nobody announced
CRASH_BACKOFF = 10.0  # the first wait after a host crash, doubled for each crash in a row
LIMIT_BACKOFF = 60.0  # the first wait after a limit with no reset told, doubled likewise
RELAY_REPLY_LINES = 20

_WINDOW = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]):([0-5][0-9])")
_CLOCK = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")
DAY = 86400.0


@dataclass(frozen=True)
class Window:
    """Hours of the day (local time) the run may work in; `end` before `start` wraps midnight."""

    start: int  # minutes after midnight
    end: int

    def wait(self, at: float, utc_offset: float) -> float:
        """Seconds from `at` until the window is open; 0 when it is open at `at`."""
        minute = ((at + utc_offset) % DAY) / 60.0
        span = (self.end - self.start) % 1440 or 1440
        into = (minute - self.start) % 1440
        return 0.0 if into < span else (1440 - into) * 60.0

    def __str__(self) -> str:
        return (
            f"{self.start // 60:02d}:{self.start % 60:02d}-{self.end // 60:02d}:{self.end % 60:02d}"
        )


def parse_window(text: str) -> Window | None:
    """`HH:MM-HH:MM` (24-hour clock); None when it does not parse or is empty."""
    found = _WINDOW.fullmatch(text.strip())
    if found is None:
        return None
    h1, m1, h2, m2 = (int(g) for g in found.groups())
    start, end = h1 * 60 + m1, h2 * 60 + m2
    return None if start == end else Window(start, end)


def parse_until(text: str, now: float, utc_offset: float) -> float | None:
    """The moment `--until` names: `HH:MM` (its next occurrence, local time), an ISO-8601 time
    (UTC unless it says otherwise), or a duration from now (`8h`); None when none of those."""
    from agentcfg.core.times import parse_duration, parse_iso

    text = text.strip()
    clock = _CLOCK.fullmatch(text)
    if clock:
        minute = int(clock.group(1)) * 60 + int(clock.group(2))
        local = (now + utc_offset) % DAY
        ahead = (minute * 60.0 - local) % DAY
        return now + (ahead or DAY)
    if re.fullmatch(r"[0-9]{4}-.*", text):
        return parse_iso(text)
    seconds = parse_duration(text) if not re.fullmatch(r"[0-9.]+", text) else None
    return None if seconds is None else now + seconds


@dataclass(frozen=True)
class Policy:
    """What the person asked of the run, and the waits the driver uses (tests shorten them)."""

    max_restarts: int = MAX_RESTARTS
    until: float | None = None
    window: Window | None = None
    utc_offset: float = 0.0  # seconds east of UTC, for the window's clock
    max_wait: float = LIMIT_WAIT  # no single wait is longer: a wait ends in a fresh look
    crash_backoff: float = CRASH_BACKOFF
    limit_backoff: float = LIMIT_BACKOFF
    reserve: float | None = None  # percent of each usage window kept for the person
    quota_margin: float = quota.QUOTA_MARGIN  # waited past a window's reset


@dataclass(frozen=True)
class Ended:
    """How one host process ended, as the driver saw it."""

    code: int | None  # its exit status; None: a signal ended it
    ending: str | None  # the run's ending the state and ledger tell; None: open work remains
    reset_at: float | None = None  # the host ended on a usage limit, with this reset (<= now:
    # a limit whose reset it did not tell)
    progressed: bool = False  # a step was closed while it ran
    next_step: bool = False  # the driver ended it to start the next step afresh (--fresh-per-step)
    quota: quota.Reading | None = None  # the driver ended it at a turn end: this window ate
    # into the person's reserve
    deadline: bool = False  # the driver ended it at `--until`
    finished: bool = False  # no ending told, but nothing the run answers for is open


@dataclass(frozen=True)
class Progress:
    """What the driver has done so far in this run."""

    starts: int = 0  # host processes started
    restarts: int = 0  # starts after the first that carried a run on, not a new step's
    fresh: int = 0  # starts of a new session for the next step (--fresh-per-step)
    failures: int = 0  # crashes in a row, for the backoff
    limits: int = 0  # usage limits in a row, for the backoff


@dataclass(frozen=True)
class Action:
    """What to do next: `finish` with an ending, `start` the host (again) at `at`, or
    `reprove` every contracted step before the run may complete."""

    kind: str  # "finish" | "start" | "reprove"
    at: float = 0.0  # when to start; later than now means a wait first
    ending: str | None = None
    exit_code: int = 0
    resume: bool = False  # carry the run on (the same session where the host can)
    reason: str = "start"  # start | cut-short | crash | usage-limit
    pause: str | None = None  # the ledger event of the wait: paused-usage-limit | paused-window
    reset_at: float | None = None  # the usage limit's reset, when one was announced
    quota: quota.Reading | None = None  # paused-quota: the window that reached the reserve
    recorded: bool = False  # the ending is the hook's: the ledger holds it already


def finish(ending: str) -> Action:
    return Action("finish", ending=ending, exit_code=events.exit_code(ending))


def first(now: float, policy: Policy) -> Action:
    """The first start: now, or when the window opens; a told halt when `--until` is past."""
    return schedule(Action("start", at=now), policy)


def after_host(progress: Progress, ended: Ended, now: float, policy: Policy) -> Action:
    """After a host process ended, as the driver saw it: the re-proof a complete run (or one
    with nothing open) needs first, the told halt at `--until`, or what `decide` says."""
    if ended.ending == events.COMPLETE or (ended.ending is None and ended.finished):
        return Action("reprove", recorded=ended.ending is not None)
    if ended.ending is None and ended.deadline:
        return finish(events.HALT_UNTIL)
    return decide(progress, ended, now, policy)


def decide(progress: Progress, ended: Ended, now: float, policy: Policy) -> Action:
    """After a host process ended: finish with the run's ending, or start the host again."""
    if ended.ending is not None:
        return replace(finish(ended.ending), recorded=True)
    if ended.next_step:  # a step closed: the next one starts in a session of its own
        return schedule(Action("start", at=now, reason="next-step"), policy)
    if progress.restarts >= policy.max_restarts:
        return finish(events.HALT_RESTARTS)
    if ended.quota is not None:
        action = quota_pause(ended.quota, now, policy)
    elif ended.reset_at is not None:
        announced = ended.reset_at if ended.reset_at > now else None
        wait = (
            announced - now
            if announced is not None
            else _backoff(policy.limit_backoff, progress.limits, LIMIT_WAIT)
        )
        action = Action(
            "start",
            at=now + min(wait, policy.max_wait),
            resume=True,
            reason="usage-limit",
            pause=events.PAUSED_USAGE_LIMIT,
            reset_at=announced,
        )
    elif ended.code == 0:
        # the host ended cleanly with work open (its block cap, its context): go on at once
        action = Action("start", at=now, resume=True, reason="cut-short")
    else:  # a crash: at once when it made progress first, else after a backoff
        wait = (
            0.0
            if ended.progressed
            else _backoff(policy.crash_backoff, progress.failures, policy.max_wait)
        )
        # Crashing again with nothing done, the session itself may be what fails (a host
        # cannot resume a session its refused first request never saved): a new one.
        again = progress.failures > 0 and not ended.progressed
        action = Action(
            "start", at=now + min(wait, policy.max_wait), resume=not again, reason="crash"
        )
    return schedule(action, policy)


def quota_pause(reading: quota.Reading, now: float, policy: Policy) -> Action:
    """The wait for a window that reached the person's reserve: until its reset plus the
    margin (no longer than `max_wait` at a time), then the same session carries the run on."""
    wait = max(0.0, quota.resume_at(reading, policy.quota_margin) - now)
    return Action(
        "start",
        at=now + min(wait, policy.max_wait),
        resume=True,
        reason="quota",
        pause=events.PAUSED_QUOTA,
        reset_at=reading.reset_at,
        quota=reading,
    )


def held(readings: Iterable[quota.Reading], now: float, policy: Policy, action: Action) -> Action:
    """A start as it stands, or the same start after a wait when a window the host last
    showed still eats into the reserve (no reserve asked: the start as it stands)."""
    if action.kind != "start" or policy.reserve is None:
        return action
    over = quota.spent(readings, policy.reserve, now, policy.quota_margin)
    if over is None:
        return action
    wait = quota_pause(over, now, policy)
    later = replace(action, at=max(action.at, wait.at), pause=wait.pause, reset_at=over.reset_at)
    return schedule(replace(later, quota=over), policy)


LIMIT_PAUSES = (events.PAUSED_USAGE_LIMIT, events.PAUSED_QUOTA)  # the waits another host can spare


def paused_until(action: Action, policy: Policy) -> float:
    """When the host a limit or the reserve paused may start again: the window's reset plus
    the margin, the announced reset, or else the end of the wait itself."""
    if action.quota is not None and action.quota.reset_at is not None:
        return quota.resume_at(action.quota, policy.quota_margin)
    return action.reset_at if action.reset_at is not None else action.at


def failover(
    action: Action, current: str, hosts: Sequence[str], paused: Mapping[str, float], now: float
) -> str | None:
    """The listed host the run carries on with at once instead of waiting on `current`: the
    first in the list's order, not `current`, whose own pause (`paused`: when each ends) is
    over. None: the wait is no limit's or the reserve's, or every other host is paused too."""
    if action.kind != "start" or action.pause not in LIMIT_PAUSES or action.at <= now:
        return None
    return next((h for h in hosts if h != current and paused.get(h, now) <= now), None)


def after_reproof(
    progress: Progress,
    failed: frozenset[str],
    before: frozenset[str] | None,
    now: float,
    policy: Policy,
    closable: bool = True,
) -> Action:
    """The run read as finished, and the re-proof at its end failed `failed` (and reopened
    what was ticked): the host carries the run on, unless no failure is the agent's to mend
    (`closable` False: a line no person trusted, a check changed since trust), the same steps
    failed the re-proof before it too (`before`), or the restart budget is spent."""
    if not closable or failed == before:
        return finish(events.HALT_UNPROVEN)
    if progress.restarts >= policy.max_restarts:
        return finish(events.HALT_RESTARTS)
    return schedule(Action("start", at=now, resume=True, reason="reproof"), policy)


def reproved(
    progress: Progress,
    failed: Sequence[tuple[str, str]],
    before: Sequence[tuple[str, str]] | None,
    recorded: bool,
    now: float,
    policy: Policy,
) -> Action:
    """After the re-proof at the run's end: `complete` when nothing failed (`recorded`: the
    hook told it already), else what `after_reproof` says of the steps that failed (`failed`,
    each with why; `before`: those of the re-proof before it, if one ran)."""
    if not failed:
        return replace(finish(events.COMPLETE), recorded=recorded)
    closable = any(
        why != "not trusted" and not why.startswith("check changed") for _s, why in failed
    )
    return after_reproof(
        progress,
        frozenset(step for step, _why in failed),
        None if before is None else frozenset(step for step, _why in before),
        now,
        policy,
        closable,
    )


HANDBACKS = (*events.HANDBACKS, events.STOPPED)  # what the hook tells of a turn it lets end


def handed_back(events_seen: Iterable[Mapping[str, object]], run: str | None) -> str | None:
    """The run's hand-back (or the person's stop) the hook recorded last for `run`; None when
    it recorded another turn end since, or none."""
    mine = [e.get("event") for e in events_seen if e.get("run") == run]
    last = next((n for n in reversed(mine) if n not in (events.VERIFIED, events.MARKED_DONE)), None)
    return last if isinstance(last, str) and last in HANDBACKS else None


def progressed(events_seen: Iterable[Mapping[str, object]]) -> bool:
    """A step was closed (`verified`) among the events."""
    return any(e.get("event") == events.VERIFIED for e in events_seen)


def moved_on(events_seen: Sequence[Mapping[str, object]], run: str | None) -> bool:
    """A step was closed, and the hook has engaged `run` on another since."""
    closed = [i for i, e in enumerate(events_seen) if e.get("event") == events.VERIFIED]
    return bool(closed) and any(
        e.get("event") == events.ENGAGE and e.get("run") == run for e in events_seen[closed[0] :]
    )


def schedule(action: Action, policy: Policy) -> Action:
    """A start moved into the window, or the told halt when it would fall after `--until`."""
    at = action.at
    if policy.window is not None:
        wait = policy.window.wait(at, policy.utc_offset)
        if wait > 0:
            at += wait
            action = replace(action, at=at, pause=action.pause or events.PAUSED_WINDOW)
    if policy.until is not None and at >= policy.until:
        return finish(events.HALT_UNTIL)
    return action


def advance(progress: Progress, action: Action, ended: Ended | None) -> Progress:
    """The driver's count after it carries out a start `action` that followed `ended`."""
    fresh = action.reason == "next-step"
    return Progress(
        starts=progress.starts + 1,
        restarts=progress.restarts + (1 if progress.starts and not fresh else 0),
        fresh=progress.fresh + fresh,
        failures=0
        if ended is None or ended.progressed or action.reason != "crash"
        else progress.failures + 1,
        limits=0 if ended is None or action.reason != "usage-limit" else progress.limits + 1,
    )


def _backoff(first_wait: float, in_a_row: int, cap: float) -> float:
    return float(min(first_wait * 2 ** min(in_a_row, 32), cap))


# --- texts: what the person at the terminal (or the CI log) reads ---


REASONS = {
    "cut-short": "the host ended with work open",
    "crash": "the host failed",
    "usage-limit": "after the usage limit",
    "next-step": "a step is done: the next one in a new session",
    "reproof": "the re-proof at the end reopened steps",
    "quota": "the usage window's reset has passed",
    "failover": "the previous host paused at its usage limit or the person's reserve",
}


def start_line(host: str, slug: str, session: str | None, action: Action, attempt: int) -> str:
    """One line when the driver starts the host: what, for whom, and why."""
    who = f"session {session}" if session else "a new session (claim pending)"
    if action.reason == "next-step":
        return f"agentcfg run: {host} on the next step of `{slug}`, {who}"
    if action.reason == "start":
        return f"agentcfg run: {host} on roadmap `{slug}`, {who}"
    if action.reason == "failover":
        return f"agentcfg run: {host} takes the run on `{slug}` over, {who}"
    why = REASONS.get(action.reason, action.reason)
    if not action.resume:
        why += " again: a new session"
    return f"agentcfg run: restart {attempt} of {host} on `{slug}` ({why}), {who}"


def pause_line(action: Action, now: float) -> str:
    """The line a wait prints: what it waits for and until when."""
    until = f"{iso(action.at)} (in {format_duration(action.at - now)})"
    if action.pause == events.PAUSED_USAGE_LIMIT:
        told = "reset announced" if action.reset_at is not None else "no reset announced"
        return f"agentcfg run: paused at a usage limit ({told}); resuming at {until}"
    if action.pause == events.PAUSED_QUOTA and action.quota is not None:
        reading = action.quota
        return (
            f"agentcfg run: paused to keep the reserve: the {quota.title(reading.window)} window "
            f"is {reading.percent:.0f}% used (reset {iso(reading.reset_at or action.at)}); "
            f"resuming at {until}"
        )
    return f"agentcfg run: outside the window; resuming at {until}"


def failover_line(was: str, now_on: str, pause: str | None, until: float, now: float) -> str:
    """The line when another host takes the run over from a paused one."""
    why = "its usage limit" if pause == events.PAUSED_USAGE_LIMIT else "the reserve"
    return (
        f"agentcfg run: {was} is paused at {why} until {iso(until)} "
        f"(in {format_duration(max(0.0, until - now))}); {now_on} carries the run on"
    )


def engagement_line(event: dict[str, object], elapsed: float, cap: int) -> str:
    """One line per engagement the ledger records: iteration, step, tokens, time so far."""
    iteration = event.get("iterations")
    step = event.get("step")
    tokens = event.get("tokens")
    total = tokens.get("total") if isinstance(tokens, dict) else None
    parts = [
        f"iteration {iteration}/{cap}",
        f"step {step}" if isinstance(step, str) else "no step",
        f"{total:,} tokens" if isinstance(total, int) else "tokens unknown",
        format_duration(elapsed),
    ]
    return "  " + " · ".join(parts)


def ending_text(
    ending: str,
    exit_code: int,
    slug: str,
    closed: int,
    row: dict[str, object] | None,
    progress: Progress,
    reproof: str | None = None,
    step: str | None = None,
) -> str:
    """The run's typed ending, with the numbers `report` has for it (and the re-proof's time,
    when one ran). A fleet member's run (`step`, its leased step) speaks for that step only: its
    `complete` is the step's, and the fleet integrates it next."""
    numbers = [f"{plural(closed, 'step')} closed"]
    if row is not None:
        tokens = row.get("tokens")
        total = tokens.get("total") if isinstance(tokens, dict) else None
        wall = row.get("wall_seconds")
        numbers = [
            plural(_int(row.get("engagements")), "engagement"),
            *numbers,
            f"{total:,} tokens" if isinstance(total, int) else "tokens unknown",
            format_duration(float(wall) if isinstance(wall, (int, float)) else 0.0),
        ]
    if step is None:
        head = f"agentcfg run: {ending} — roadmap `{slug}` (exit {exit_code})"
    elif ending == events.COMPLETE:
        head = (
            f"agentcfg run: step {step} closed in this member's worktree; the fleet integrates it"
        )
    else:
        head = f"agentcfg run: {ending} on step {step} of roadmap `{slug}` (exit {exit_code})"
    return "\n".join(
        (
            head,
            "  " + ", ".join(numbers),
            f"  {plural(progress.starts, 'host start')}, {plural(progress.restarts, 'restart')}",
            *([f"  {reproof}"] if reproof else []),
        )
    )


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def relay_note(
    slug: str,
    reason: str,
    status: str,
    receipts: list[str],
    previous_reply: str,
    continuation: str,
) -> str:
    """The first prompt of a new session that carries a run on: where the run stands, the
    last receipts, the end of the previous session's final reply, then the continuation."""
    lines = [
        f"agentcfg run: this new session carries on the run on roadmap `{slug}` "
        f"({REASONS.get(reason, reason)}).",
        f"Roadmap status: {status}",
    ]
    if receipts:
        lines.append("Last receipts (steps proven by their verify line):")
        lines += (f"  {line}" for line in receipts[-5:])
    reply = [line for line in previous_reply.strip().splitlines() if line.strip()]
    if reply:
        lines.append("The previous session's final reply ended:")
        lines += (f"> {line}" for line in reply[-RELAY_REPLY_LINES:])
    lines.append("")
    lines.append(continuation)
    return "\n".join(lines)
