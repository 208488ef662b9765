"""What the continuations did, from the ledger in one streaming pass: runs, totals, burndowns.

Pure: an iterable of ledger lines and the filters in, a Report out. A run starts at its
`claimed` event (or its first line) and lasts until a claim of that session and roadmap after
its ending: an ending followed by new work is the same run going on, and a claim the session
makes again while its run goes on (a re-claim) is the same run too. Memory stays bounded:
finished runs beyond `keep` are folded into the totals and only the newest are kept as rows.

This fold is the one place a run's outcome and counts are told: `report`, its page, `watch` and
`sessions` all read them from here (`Folder`, `settle`).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentcfg.core import events
from agentcfg.core.evidence import WORDS
from agentcfg.core.quota import title
from agentcfg.core.times import iso, parse_iso
from agentcfg.core.visible import visible

# what a run's outcome can be; `blocked` and `complete` runs may still go on with new work
ENDINGS = events.ENDINGS
# a person's stop: the driver's ending and the hook's note of it; not a rung of the ladder
STOPPED = events.STOPPED
# `agentcfg run` waiting for a usage limit to reset, for its window to open, or for a usage
# window that reached the person's reserve to reset
WAITS = events.WAITS
WAITED_FOR = {name: events.WORDS[name] for name in WAITS}
PAUSES_KEPT = 32  # quota pauses and failovers listed per run
# what a run without an ending is: its driver or session still reports, or they are gone
IDLE_AFTER = 3600.0  # no event of the run for this long: nothing drives it any more
WAIT_GRACE = 600.0  # a wait whose resume time passed this long ago: its driver is gone
# what a run is that has no ending of the ladder's: their words tell why
UNENDED = (STOPPED, "waiting", "idle", "running")
_ENDED = frozenset((*ENDINGS, STOPPED))  # what ends a run: a claim after it starts another
TIMELINE_KEPT = 128  # marks, waits and closes per run on its timeline
CHANGES_KEPT = 100
# runs seen at once before the oldest ended one is folded into the totals
OPEN_RUNS = 4096
BURNDOWN_POINTS = 64
# past these, a count on a ledger line is forged: tokens are clamped, an open count dropped
TOKENS_LIMIT = 10**15
STEPS_LIMIT = 10**7
SPARKS = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Engagement:
    """What one continuation cost: the tokens of the segment until the next recorded fire."""

    number: int  # the run's n-th engagement
    step: str | None  # the step it named
    tokens: int | None  # None: the host's transcript did not tell
    closed: int  # steps closed before the next fire

    @property
    def wasted(self) -> bool:
        return self.closed == 0 and self.tokens is not None

    def to_json(self) -> dict[str, Any]:
        return {"engagement": self.number, "step": self.step, "tokens": self.tokens,
                "closed": self.closed}  # fmt: skip


@dataclass
class Spending:
    """Tokens recorded on ledger events, and what the engagements among them achieved."""

    total: int | None = None  # None while no event told its tokens
    unknown: int = 0  # events whose tokens the host did not tell
    waste: int = 0  # tokens of engagements that closed nothing
    costliest: Engagement | None = None

    def add(self, tokens: int | None) -> None:
        if tokens is None:
            self.unknown += 1
        else:
            self.total = (self.total or 0) + tokens

    def charge(self, engagement: Engagement) -> None:
        if engagement.tokens is None:
            return
        if engagement.wasted:
            self.waste += engagement.tokens
        if self.costliest is None or engagement.tokens > (self.costliest.tokens or 0):
            self.costliest = engagement

    def to_json(self, closed: int) -> dict[str, Any]:
        per = self.total / closed if self.total is not None and closed else None
        return {
            "total": self.total,
            "per_step_closed": None if per is None else round(per),
            "waste": self.waste if self.total is not None else None,
            "unknown": self.unknown,
            "costliest": None if self.costliest is None else self.costliest.to_json(),
        }


@dataclass
class Timeline:
    """A run on a time axis: its engagements, the open steps as they changed, its waits (a usage
    limit, a window, a person's stop) as spans, restarts of its host, and each step it closed."""

    engagements: collections.deque[tuple[float, int, str | None]] = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_KEPT)
    )  # (at, number, step named)
    open: collections.deque[tuple[float, int]] = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_KEPT)
    )  # (at, steps open)
    waits: collections.deque[list[Any]] = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_KEPT)
    )  # [kind, from, until or None while it lasts, by]
    restarts: collections.deque[tuple[float, str]] = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_KEPT)
    )  # (at, reason)
    closes: collections.deque[tuple[float, str, int]] = field(
        default_factory=lambda: collections.deque(maxlen=TIMELINE_KEPT)
    )  # (at, step, engagement: 0 is the person's own turn)

    def point(self, at: float, open_count: int) -> None:
        if not self.open or self.open[-1][1] != open_count:
            self.open.append((at, open_count))

    def wait(self, kind: str, at: float, until: float | None, by: str | None = None) -> None:
        self.end_waits(at)
        self.waits.append([kind, at, until, by])

    def end_waits(self, at: float, kinds: tuple[str, ...] = WAITS) -> None:
        """Close the spans of these kinds still open: what they waited for came at `at`."""
        for span in self.waits:
            if span[0] in kinds and (span[2] is None or span[2] > at) and span[1] <= at:
                span[2] = at

    def to_json(self, costs: dict[int, int | None]) -> dict[str, Any]:
        return {
            "engagements": [
                {"at": iso(at), "engagement": n, "step": step, "tokens": costs.get(n)}
                for at, n, step in self.engagements
            ],
            "open": [{"at": iso(at), "open": n} for at, n in self.open],
            "waits": [
                {
                    "kind": kind,
                    "from": iso(start),
                    "until": None if end is None else iso(end),
                    "by": by,
                }
                for kind, start, end, by in self.waits
            ],
            "restarts": [{"at": iso(at), "reason": reason} for at, reason in self.restarts],
            "closes": [
                {"at": iso(at), "step": step, "engagement": n, "tokens": costs.get(n)}
                for at, step, n in self.closes
            ],
        }


@dataclass
class Run:
    run: str
    slug: str
    started: float
    last: float
    engagements: int = 0
    closed: int = 0
    outcome: str = "running"
    cut_short: int = 0  # turns the host ended while a block of ours still held them
    streak: int = 0
    longest_streak: int = 0
    last_open: int | None = None
    burndown: collections.deque[int] = field(
        default_factory=lambda: collections.deque(maxlen=BURNDOWN_POINTS)
    )
    spending: Spending = field(default_factory=Spending)
    spend: collections.deque[Engagement] = field(
        default_factory=lambda: collections.deque(maxlen=BURNDOWN_POINTS)
    )
    pending: tuple[int, str | None, int | None] | None = None  # an engagement awaiting its cost
    proven: int | None = None  # contracted steps closed by a receipt, as the last fire saw
    contract: int | None = None  # steps in the run's contract; None: no fire told it
    ended_at: float | None = None  # when its ending was recorded
    last_event: str = ""
    stop: tuple[float, str] | None = None  # a person's stop in effect: when, by what
    stopped: tuple[float, str] | None = None  # the last stop, kept once lifted
    resumed_at: float | None = None  # the person lifted the stop then
    resume_at: float | None = None  # the wait the driver last recorded ends then
    said: str = "running"  # the outcome in plain words
    evidence: str = ""  # what the proofs of a complete run show (core/evidence.py)
    words: dict[str, int] = field(default_factory=dict)  # its steps per evidence word
    folded: bool = False  # told as a row already
    timeline: Timeline = field(default_factory=lambda: Timeline())
    pauses: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=PAUSES_KEPT)
    )  # paused-quota: when, the window, its use and reset
    failovers: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=PAUSES_KEPT)
    )  # run-failover: when, from which host to which

    @property
    def ended(self) -> bool:
        return self.outcome in _ENDED

    def to_json(self) -> dict[str, Any]:
        costs = {e.number: e.tokens for e in self.spend}
        return {
            "run": self.run,
            "slug": self.slug,
            "started": iso(self.started),
            "engagements": self.engagements,
            "closed": self.closed,
            "proven": self.proven,
            "contract": self.contract,
            "outcome": self.outcome,
            "said": self.said,
            "evidence": self.evidence or None,
            "last": iso(self.last),
            "ended": None if self.ended_at is None else iso(self.ended_at),
            "cut_short": self.cut_short,
            "wall_seconds": round(self.last - self.started, 3),
            "burndown": list(self.burndown),
            "tokens": {
                **self.spending.to_json(self.closed),
                "engagements": [e.to_json() for e in self.spend],
            },
            "timeline": self.timeline.to_json(costs),
            "quota_pauses": list(self.pauses),
            "failovers": list(self.failovers),
        }


# what the fleets in the ledger did: leases and integrations, each fleet's start and end, the
# member runs it recorded and the waits of members with nothing ready
LEASE_EVENTS = frozenset(
    {events.LEASED, events.LEASE_EXPIRED, events.LEASE_LOST, events.INTEGRATED, events.REOPENED}
)
FLEET_EVENTS = LEASE_EVENTS | {
    events.FLEET_START,
    events.FLEET_END,
    events.MEMBER_RUN,
    events.WAITING,
}
FLEETS_KEPT = 20  # fleets listed, the newest
MEMBERS_KEPT = 256  # members told of one fleet
SECONDS_LIMIT = 10.0**9  # past this, a member run's time on a ledger line is forged


@dataclass
class Member:
    """What one member of one fleet did and cost: its steps integrated, leases, the runs of its
    host on them (engagements, tokens, time), its waits, reopenings and takeovers."""

    steps: int = 0
    leased: int = 0
    reopened: int = 0
    takeovers: int = 0  # leases it took over from a holder whose lease had run out
    waits: int = 0  # its host waiting for a usage limit or a window; it waiting for a step
    runs: int = 0
    engagements: int = 0
    spending: Spending = field(default_factory=Spending)
    seconds: float = 0.0  # its host's time on its steps

    def run(self, event: dict[str, Any]) -> None:
        """A `member-run`: the host's run on one leased step, as the member recorded it."""
        self.runs += 1
        self.engagements += _amount(event.get("engagements"))
        self.waits += _amount(event.get("waits"))
        self.spending.add(_tokens(event.get("tokens")))
        seconds = event.get("seconds")
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            self.seconds += seconds if 0 <= seconds <= SECONDS_LIMIT else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "leased": self.leased,
            "reopened": self.reopened,
            "takeovers": self.takeovers,
            "waits": self.waits,
            "runs": self.runs,
            "engagements": self.engagements,
            "tokens": self.spending.total,
            "tokens_unknown": self.spending.unknown,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class FleetRun:
    """One fleet: from its `fleet-start` (or the first fleet event of its roadmap) to its
    `fleet-end`, each member's part, and its wall time against its members' time."""

    slug: str
    started: float
    last: float
    agents: int | None = None
    ended: float | None = None
    ending: str | None = None
    members: dict[str, Member] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        wall = (self.ended if self.ended is not None else self.last) - self.started
        told = [m for m in self.members.values() if m.runs]
        return {
            "slug": self.slug,
            "started": iso(self.started),
            "ended": None if self.ended is None else iso(self.ended),
            "ending": self.ending,
            "agents": self.agents,
            "wall_seconds": round(wall, 3),
            # None while no member recorded a run: the members' time is not known
            "member_seconds": round(sum(m.seconds for m in told), 3) if told else None,
            "members": {
                name: member.to_json()
                for name, member in sorted(self.members.items(), key=lambda m: _member_order(m[0]))
            },
        }


def _member_order(name: str) -> tuple[int, str]:
    return (int(name), "") if name.isdigit() and len(name) < 10 else (10**10, name)


@dataclass
class Fleet:
    """What the fleets in the ledger did: steps per member, integrations, takeovers, who holds
    which step as the ledger ends, and each fleet's members with what they cost."""

    members: dict[str, collections.Counter[str]] = field(default_factory=dict)
    holding: dict[tuple[str, str], str] = field(default_factory=dict)  # (slug, step) -> member
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    # per member, each lease it held as a span: [step, from, until or None, how it ended]
    lanes: dict[str, collections.deque[list[Any]]] = field(default_factory=dict)
    held: dict[tuple[str, str], list[Any]] = field(default_factory=dict)  # the open spans
    runs: collections.deque[FleetRun] = field(
        default_factory=lambda: collections.deque(maxlen=FLEETS_KEPT)
    )
    going: dict[str, FleetRun] = field(default_factory=dict)  # slug -> its fleet not yet ended

    def add(self, name: str, event: dict[str, Any]) -> None:
        if name == events.WAITING and "member" not in event:
            return  # a single agent's wait: no fleet's
        member, place = (
            str(event.get("member", "?")),
            (str(event.get("slug")), str(event.get("step"))),
        )
        at = event.get("_at")
        at = at if isinstance(at, float) else parse_iso(event.get("at"))
        self.counts[name] += 1
        if at is not None:
            self._account(name, member, place[0], event, at)
        if name not in LEASE_EVENTS:
            return
        if name == events.REOPENED:
            self.counts[f"reopened-{event.get('reason')}"] += 1
        self.members.setdefault(member, collections.Counter())[name] += 1
        if name == events.LEASED:
            self.holding[place] = member
        else:
            self.holding.pop(place, None)
        if at is not None:
            self._span(name, member, place, at)

    def _account(self, name: str, member: str, slug: str, event: dict[str, Any], at: float) -> None:
        """The event in its fleet's figures: a `fleet-start` begins a fleet of its roadmap, a
        `fleet-end` ends it, anything else belongs to the roadmap's fleet going on."""
        current = self.going.get(slug)
        if current is None or name == events.FLEET_START:
            agents = event.get("agents")
            current = FleetRun(slug, at, at, agents if _count(agents) else None)
            self.runs.append(current)
            self.going[slug] = current
            if len(self.going) > FLEETS_KEPT:  # only the fleets still listed go on
                self.going = {s: f for s, f in self.going.items() if any(f is r for r in self.runs)}
        current.last = max(current.last, at)
        if name == events.FLEET_END:
            ending = event.get("ending")
            current.ended, current.ending = at, ending if isinstance(ending, str) else None
            del self.going[slug]
            return
        if name == events.FLEET_START or "member" not in event:
            return
        if member not in current.members and len(current.members) >= MEMBERS_KEPT:
            return  # no fleet has that many members: a forged ledger's
        part = current.members.setdefault(member, Member())
        if name == events.MEMBER_RUN:
            part.run(event)
        elif name == events.WAITING:
            part.waits += 1
        elif name == events.LEASED:
            part.leased += 1
        elif name == events.INTEGRATED:
            part.steps += 1
        elif name == events.REOPENED:
            part.reopened += 1
        elif name == events.LEASE_EXPIRED:
            part.takeovers += 1

    def _span(self, name: str, member: str, place: tuple[str, str], at: float) -> None:
        """A lease on the member's lane, from `leased` until the step is integrated, reopened,
        taken over or lost."""
        before = self.held.pop(place, None)
        if before is not None and before[2] is None:
            before[2], before[3] = at, "expired" if name == events.LEASED else name
        if name == events.LEASED:
            span = [place[1], at, None, None]
            lane = self.lanes.setdefault(member, collections.deque(maxlen=TIMELINE_KEPT))
            lane.append(span)
            self.held[place] = span

    def to_json(self) -> dict[str, Any] | None:
        if not self.counts:
            return None
        return {
            "leases": self.counts[events.LEASED],
            "integrated": self.counts[events.INTEGRATED],
            "reopened": self.counts[events.REOPENED],
            "conflicts": self.counts["reopened-conflict"],
            "reverify_failed": self.counts["reopened-reverify-failed"],
            "takeovers": self.counts[events.LEASE_EXPIRED],
            "lost": self.counts[events.LEASE_LOST],
            "members": {
                member: {
                    "leased": c[events.LEASED],
                    "integrated": c[events.INTEGRATED],
                    "reopened": c[events.REOPENED],
                }
                for member, c in sorted(self.members.items())
                if c[events.LEASED]
            },
            "holding": [
                {"slug": slug, "step": step, "member": member}
                for (slug, step), member in sorted(self.holding.items())
            ],
            "lanes": {
                member: [
                    {
                        "step": step,
                        "from": iso(start),
                        "until": None if end is None else iso(end),
                        "ended": how,
                    }
                    for step, start, end, how in spans
                ]
                for member, spans in sorted(self.lanes.items())
            },
            "fleets": [run.to_json() for run in self.runs],
        }


@dataclass
class Report:
    lines: int = 0
    skipped: int = 0
    matched: int = 0
    runs_total: int = 0
    engagements: int = 0
    closed: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    events: collections.Counter[str] = field(default_factory=collections.Counter)
    refusals: collections.Counter[str] = field(default_factory=collections.Counter)
    longest_streak: int = 0
    released_inside: int = 0  # releases the claimed session ran itself
    wall: float = 0.0  # the runs' wall time, summed
    proven: int = 0  # steps proven of the contracts of the runs that had one
    evidence: collections.Counter[str] = field(default_factory=collections.Counter)  # words
    contracted: int | None = None  # steps in those contracts; None: no run had one
    spending: Spending = field(default_factory=Spending)
    costliest_run: Run | None = None
    rows: list[Run] = field(default_factory=list)
    fleet: Fleet = field(default_factory=Fleet)
    # every halt-contract-changed and halt-check-changed (the newest CHANGES_KEPT): what the
    # person must decide
    contract_changes: collections.deque[dict[str, Any]] = field(
        default_factory=lambda: collections.deque(maxlen=CHANGES_KEPT)
    )

    def to_json(self) -> dict[str, Any]:
        per = self.closed / self.engagements if self.engagements else None
        return {
            "lines": self.lines,
            "skipped": self.skipped,
            "matched": self.matched,
            "runs": self.runs_total,
            "engagements": self.engagements,
            "steps_closed": self.closed,
            "steps_closed_per_engagement": None if per is None else round(per, 3),
            "outcomes": dict(sorted(self.outcomes.items())),
            "deferred_to_quality_gate": self.events[events.DEFERRED_QUALITY_GATE],
            "paused": self.events[events.PAUSED],
            "released": {
                "total": self.events[events.RELEASED],
                "inside_session": self.released_inside,
            },
            "handbacks": {
                "question": self.events[events.HANDBACK_QUESTION],
                "background": self.events[events.HANDBACK_BACKGROUND],
            },
            "shadow_would_engage": self.events[events.SHADOW_ENGAGE],
            "cut_short_by_host": self.events[events.CUT_SHORT],
            "longest_engagement_streak": self.longest_streak,
            "wall_seconds": round(self.wall, 3),
            "proven": None
            if self.contracted is None
            else {"proven": self.proven, "contract": self.contracted},
            "evidence": {word: self.evidence[word] for word in WORDS if self.evidence[word]},
            "refusals": dict(sorted(self.refusals.items())),
            "verified": self.events[events.VERIFIED],
            "marked_done": self.events[events.MARKED_DONE],
            "errors": self.events[events.ERROR] + self.events[events.CONCERN_ERROR],
            "tokens": {
                **self.spending.to_json(self.closed),
                "costliest_run": None
                if self.costliest_run is None
                else {"run": self.costliest_run.run, "slug": self.costliest_run.slug},
            },
            "rows": [run.to_json() for run in self.rows],
            "fleet": self.fleet.to_json(),
            "contract_changed": list(self.contract_changes),
        }


def build(
    lines: Iterable[str | bytes],
    since: float | None = None,
    slug: str | None = None,
    run: str | None = None,
    keep: int = 20,
    now: float | None = None,
) -> Report:
    """Fold ledger lines into a Report; lines that do not parse are counted and skipped.
    `now`: the time a run without an ending is judged at (None: as the ledger ends)."""
    folder = Folder(since=since, slug=slug, run=run, keep=keep)
    for raw in lines:
        folder.take(raw)
    return folder.close(now)


class Folder:
    """The fold itself, a line at a time: `build` runs it over a whole ledger; `watch` feeds it
    the lines it tails and asks for a claim's run as it stands (`current`)."""

    def __init__(
        self,
        since: float | None = None,
        slug: str | None = None,
        run: str | None = None,
        keep: int = 20,
    ) -> None:
        self.since, self.slug, self.run = since, slug, run
        self.keep = keep
        self.report = Report()
        self.active: dict[tuple[str, str], Run] = {}
        self.finished: collections.deque[Run] = collections.deque(maxlen=keep)
        self.drivers: dict[str, Run] = {}  # a driver's run, by the id it gives it
        self.pending: dict[str, str] = {}  # a driver's pending claim -> its id

    def current(self, key: str, slug: str) -> Run | None:
        """The newest run of this session key on this roadmap, as far as the ledger was read."""
        return self.active.get((key, slug))

    def take(self, raw: str | bytes) -> None:
        report = self.report
        report.lines += 1
        event = _event(raw)
        if event is None:
            report.skipped += 1
            return
        at, name, key, event_slug = (
            event["_at"],
            event["event"],
            event.get("run"),
            event.get("slug"),
        )
        if self.since is not None and at < self.since:
            return
        if self.slug is not None and event_slug != self.slug:
            return
        person = name in _PERSON_EVENTS and key is None  # a stop of every run on the roadmap
        if (
            self.run is not None
            and not person
            and not (isinstance(key, str) and key.startswith(self.run))
        ):
            return
        report.matched += 1
        report.events[name] += 1
        if name == events.REFUSED:
            report.refusals[str(event.get("detector"))] += 1
        if name == events.RELEASED and event.get("inside_session") is True:
            report.released_inside += 1
        if name in FLEET_EVENTS:
            report.fleet.add(name, event)
        if person and isinstance(event_slug, str):
            self._person(name, event_slug, event, at)
            return
        driver = self._driver(event)
        if not isinstance(key, str) or not isinstance(event_slug, str):
            return
        ident = (key, event_slug)
        if name in _NOT_RUN_EVENTS:  # the session's shell: its run's open steps and closes
            known = self.active.get(ident)
            if known is not None and name in (events.VERIFIED, events.MARKED_DONE):
                _closing(report, known, name, event, at)
            return
        if driver is not None:
            self._join(ident, driver)
        current = self.active.pop(ident, None)  # put back last: the dict runs oldest to newest
        if current is None or (name == events.CLAIMED and current.ended):
            if current is not None:
                self._fold(current)
            current = Run(key, event_slug, at, at)
            report.runs_total += 1
        self.active[ident] = current
        if driver is not None and driver not in self.drivers:
            self.drivers[driver] = current
        _apply(report, current, name, event, at)
        if len(self.active) > OPEN_RUNS:
            self._fold(self.active.pop(next(iter(self.active))))

    def _driver(self, event: dict[str, Any]) -> str | None:
        """The id `agentcfg run` gives its run across the sessions it starts: on its own
        events, or on the claim that binds a pending claim it made."""
        driver, pending = event.get("driver"), event.get("pending")
        if not isinstance(pending, str):
            return driver if isinstance(driver, str) else None
        if isinstance(driver, str):
            self.pending[pending] = driver  # its session's claim, when bound, is the same run
            if len(self.pending) > OPEN_RUNS:
                del self.pending[next(iter(self.pending))]
            return driver
        return self.pending.pop(pending, None)

    def _join(self, ident: tuple[str, str], driver: str) -> None:
        """A new session of a driver's run goes on as that run: the row its claim just made,
        with nothing done yet, is that run's."""
        owner = self.drivers.get(driver)
        here = self.active.get(ident)
        if owner is None or here is owner or owner.folded:
            return
        if here is not None:
            if here.engagements or here.closed:
                return
            del self.active[ident]
            self.report.runs_total -= 1
        self.active[ident] = owner

    def _fold(self, run: Run, now: float | None = None) -> None:
        """A run ends as a row: once, however many sessions it ran in."""
        if not run.folded:
            run.folded = True
            _finish(self.report, self.finished, run, now)
            self.drivers = {d: r for d, r in self.drivers.items() if r is not run}

    def _person(self, name: str, slug: str, event: dict[str, Any], at: float) -> None:
        """`stop-requested` and `resumed`: a person's stop of every run on the roadmap."""
        by = str(event.get("by") or "a person")
        for run in self.active.values():
            if run.slug != slug or (run.ended and run.outcome != STOPPED):
                continue
            if name == events.STOP_REQUESTED:
                if run.stop is None:
                    run.stop = run.stopped = (at, by)
                    run.timeline.wait(STOPPED, at, None, by)
            elif run.stop is not None or run.outcome == STOPPED:
                run.stop = None
                run.resumed_at = at
                run.timeline.end_waits(at, (STOPPED,))

    def close(self, now: float | None = None) -> Report:
        """The report as the ledger read so far tells it, the runs still open judged at `now`."""
        for leftover in self.active.values():
            self._fold(leftover, now)
        self.active = {}
        self.report.rows = sorted(self.finished, key=lambda r: r.started)[-self.keep :]
        return self.report


_PERSON_EVENTS = frozenset({events.STOP_REQUESTED, events.RESUMED})
# besides a run's course: its shell's closes, errors, the checkpoints taken before its steps
_NOT_RUN_EVENTS = frozenset(
    {
        events.VERIFIED,
        events.MARKED_DONE,
        events.ERROR,
        events.CONCERN_ERROR,
        events.CHECKPOINT,
        events.CHECKPOINT_FAILED,
    }
)
# the run goes on through these: a re-engagement streak is not broken by them
_STREAK_KEPT = frozenset(
    {
        events.REFUSED,
        events.CLAIMED,
        events.CLAIM_KEPT,
        events.DEFERRED_QUALITY_GATE,
        events.RELEASED,
    }
)


def _event(raw: str | bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("event"), str):
        return None
    at = parse_iso(event.get("at"))
    if at is None:
        return None
    event["_at"] = at
    return event


def _open(event: dict[str, Any]) -> int | None:
    open_count = event.get("open")
    if type(open_count) is not int or not 0 <= open_count <= STEPS_LIMIT:
        return None  # no roadmap holds that many steps: a forged count
    return open_count


def _count_open(report: Report, run: Run, open_count: int | None, at: float) -> None:
    if open_count is None:
        return
    if run.last_open is not None and open_count < run.last_open:
        drop = run.last_open - open_count
        run.closed += drop
        report.closed += drop
    run.last_open = open_count
    run.timeline.point(at, open_count)


def _closing(report: Report, run: Run, name: str, event: dict[str, Any], at: float) -> None:
    """A step checked or ticked from the run's own session: the open steps it leaves, and for
    `marked-done` the step closed, when, and in which engagement."""
    run.last = max(run.last, at)
    _count_open(report, run, _open(event), at)
    step = event.get("step")
    if name == events.MARKED_DONE and isinstance(step, str):
        run.timeline.closes.append((at, step, run.engagements))


def _apply(report: Report, run: Run, name: str, event: dict[str, Any], at: float) -> None:
    run.last = max(run.last, at)
    run.last_event = name
    open_count = _open(event)
    _count_open(report, run, open_count, at)
    if name in _ENDED:
        _end(run, name, event, at)
    else:
        _by_driver(run, name, event, at)
    if name == events.CUT_SHORT:
        run.cut_short += 1
    proven, contract = event.get("proven"), event.get("contract")
    if _count(proven) and _count(contract):
        run.proven, run.contract = proven, contract
    if name in (events.HALT_CONTRACT_CHANGED, events.HALT_CHECK_CHANGED):
        changes = event.get("changes")
        shown = [str(c) for c in changes] if isinstance(changes, list) else []
        report.contract_changes.append(
            {"run": run.run, "slug": run.slug, "at": iso(at), "changes": shown}
        )
    if name == events.ENGAGE:
        run.outcome, run.ended_at, run.stop = "running", None, None
        run.engagements += 1
        report.engagements += 1
        run.streak += 1
        run.longest_streak = max(run.longest_streak, run.streak)
        run.timeline.end_waits(at, (*WAITS, STOPPED))
        step = event.get("step")
        run.timeline.engagements.append(
            (at, run.engagements, step if isinstance(step, str) else None)
        )
        if isinstance(open_count, int):
            run.burndown.append(open_count)
    elif name not in _STREAK_KEPT:
        run.streak = 0  # the agent was let go: the streak of re-engagements ends
    if "tokens" in event:  # a fire of the run: its tokens paid for the segment since the last
        _spend(report, run, name, event, open_count)


def _end(run: Run, name: str, event: dict[str, Any], at: float) -> None:
    """An ending of the run: its outcome, the evidence a complete one shows, a person's stop."""
    run.outcome, run.ended_at = name, at
    told = event.get("evidence")
    if name == events.COMPLETE and isinstance(told, str):
        run.evidence = visible(told[:400])
        words = event.get("words")
        if isinstance(words, dict):
            run.words = {w: n for w, n in words.items() if w in WORDS and _count(n)}
    if name == STOPPED:
        by = event.get("by")
        if run.stop is None:
            run.stop = run.stopped = (at, str(by) if by else "a person")
            run.timeline.wait(STOPPED, at, None, run.stop[1])


def _by_driver(run: Run, name: str, event: dict[str, Any], at: float) -> None:
    """What `agentcfg run` did with the run: a wait, a failover, a start of the host."""
    if name in WAITS:
        run.resume_at = parse_iso(event.get("resume_at"))
        run.timeline.wait(name, at, run.resume_at)
        if name == events.PAUSED_QUOTA:
            run.pauses.append(_pause(event, at))
    elif name == events.RUN_FAILOVER:
        run.failovers.append(
            {"at": iso(at), "from": _word(event.get("from")), "to": _word(event.get("to")),
             "reason": _word(event.get("reason"))}
        )  # fmt: skip
    elif name in (events.RUN_START, events.RUN_RESUME):
        run.timeline.end_waits(at)
        attempt = event.get("attempt")
        if name == events.RUN_RESUME or (type(attempt) is int and attempt > 1):
            run.timeline.restarts.append((at, str(event.get("reason") or "restart")))


def _spend(report: Report, run: Run, name: str, event: dict[str, Any], open_count: object) -> None:
    tokens = _tokens(event["tokens"])
    run.spending.add(tokens)
    report.spending.add(tokens)
    now_open = open_count if isinstance(open_count, int) else None
    if run.pending is not None:
        number, step, was_open = run.pending
        closed = max(0, was_open - now_open) if was_open is not None and now_open is not None else 0
        engagement = Engagement(number, step, tokens, closed)
        run.spend.append(engagement)
        run.spending.charge(engagement)
        before = report.spending.costliest
        report.spending.charge(engagement)
        if report.spending.costliest is not before:
            report.costliest_run = run
    step = event.get("step")
    run.pending = (
        (run.engagements, step if isinstance(step, str) else None, now_open)
        if name == events.ENGAGE
        else None
    )


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _amount(value: object) -> int:
    """A count a ledger line tells, or 0 when it is not one (or a forged one)."""
    return value if type(value) is int and 0 <= value <= STEPS_LIMIT else 0


def _tokens(value: object) -> int | None:
    total = value.get("total") if isinstance(value, dict) else None
    return min(total, TOKENS_LIMIT) if type(total) is int and total >= 0 else None


def _finish(
    report: Report, finished: collections.deque[Run], run: Run, now: float | None = None
) -> None:
    run.outcome, run.said = settle(run, now)
    if run.last_open is not None and run.burndown and run.burndown[-1] != run.last_open:
        run.burndown.append(run.last_open)  # where it stands as it ends: 0 once complete
    report.outcomes[run.outcome] += 1
    if run.outcome == events.COMPLETE:
        report.evidence.update(run.words)
    report.wall += run.last - run.started
    if run.contract is not None:
        report.proven += run.proven or 0
        report.contracted = (report.contracted or 0) + run.contract
    report.longest_streak = max(report.longest_streak, run.longest_streak)
    finished.append(run)


def sparkline(values: Iterable[int]) -> str:
    points = list(values)
    if not points:
        return ""
    top = max(points) or 1
    return "".join(SPARKS[min(len(SPARKS) - 1, round(v / top * (len(SPARKS) - 1)))] for v in points)


def settle(run: Run, now: float | None) -> tuple[str, str]:
    """What a run is at `now` (None: as its ledger ends), as an outcome and in plain words.

    An ending is what the run is. Without one, a person's stop makes it `stopped`; a wait whose
    resume time has passed with no driver taking it up, or a run nothing has reported on for
    IDLE_AFTER, is `idle`; a wait still ahead is `waiting`; anything else is `running`."""
    if run.outcome in _ENDED and run.outcome != STOPPED:
        return run.outcome, _ending_words(run)
    if run.stop is not None or run.outcome == STOPPED:
        at, by = run.stop or run.stopped or (run.ended_at or run.last, "a person")
        words = f"stopped by {_by(by)} at {_clock(at)}"
        if run.resumed_at is not None and run.stop is None:
            words += f"; resumed at {_clock(run.resumed_at)}, no turn since"
        return STOPPED, words
    if run.last_event in WAITS and run.resume_at is not None:
        what = WAITED_FOR[run.last_event]
        if now is None or now < run.resume_at + WAIT_GRACE:
            return "waiting", f"waiting for {what}; resumes at {_clock(run.resume_at)}"
        return "idle", (
            f"idle since {_clock(run.last)}: it waited for {what} until "
            f"{_clock(run.resume_at)} and no driver took it up"
        )
    if now is not None and now - run.last > IDLE_AFTER:
        return "idle", f"idle since {_clock(run.last)}: no driver or session has reported since"
    return "running", "running"


def _ending_words(run: Run) -> str:
    at = f" at {_clock(run.ended_at)}" if run.ended_at is not None else ""
    name = run.outcome
    if name.startswith("halt-"):
        return f"halted{at}: {name.removeprefix('halt-').replace('-', ' ')}"
    return f"{name}{at}" + (f": {run.evidence}" if name == events.COMPLETE and run.evidence else "")


def _by(by: str) -> str:
    return {"terminal": "a person (terminal)", "signal": "a signal", "a person": by}.get(
        by, f"a person ({by})"
    )


def _clock(at: float) -> str:
    return iso(at)[:16].replace("T", " ")


def _word(value: object) -> str | None:
    """A short name from the ledger (a host, a window), shown escaped; None when not one."""
    return visible(value[:40]) if isinstance(value, str) else None


def _pause(event: dict[str, Any], at: float) -> dict[str, Any]:
    """A paused-quota event as a report row lists it."""
    used = event.get("utilization")
    reset, resume = parse_iso(event.get("reset_at")), parse_iso(event.get("resume_at"))
    return {
        "at": iso(at),
        "window": _word(event.get("window")),
        "utilization": used
        if isinstance(used, (int, float)) and not isinstance(used, bool)
        else None,
        "reset_at": None if reset is None else iso(reset),
        "resume_at": None if resume is None else iso(resume),
    }


def pause_lines(row: dict[str, Any]) -> list[str]:
    """A run's pauses for the person's reserve and its failovers, one line each, oldest first."""
    lines: list[tuple[str, str]] = []
    for pause in row.get("quota_pauses", []):
        used = pause["utilization"]
        share = f"{used * 100:.0f}% used" if isinstance(used, (int, float)) else "use unknown"
        reset = pause["reset_at"] or "not told"
        lines.append(
            (
                pause["at"],
                f"{pause['at'][11:16]} paused for the reserve: {title(pause['window'] or '?')} "
                f"window {share}, reset {reset[11:16] if pause['reset_at'] else reset}",
            )
        )
    for moved in row.get("failovers", []):
        lines.append(
            (
                moved["at"],
                f"{moved['at'][11:16]} {moved['to'] or '?'} took over from {moved['from'] or '?'} "
                f"({'the reserve' if moved['reason'] == events.PAUSED_QUOTA else 'its usage limit'})",
            )
        )
    return [line for _at, line in sorted(lines)]
