"""What the continuations did, from the ledger in one streaming pass: runs, totals, burndowns.

Pure: an iterable of ledger lines and the filters in, a Report out. A run starts at its
`claimed` event (or its first line) and lasts until the next claim of that session and
roadmap: an ending followed by new work is the same run going on. Memory stays bounded:
finished runs beyond `keep` are folded into the totals and only the newest are kept as rows.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentcfg.core.times import iso, parse_iso

# what a run's outcome can be; `blocked` and `complete` runs may still go on with new work
ENDINGS = (
    "complete",
    "blocked",
    "paused",
    "released",
    "halt-max-iterations",
    "halt-token-budget",
    "halt-wall-clock",
    "halt-stall",
    "halt-roadmap-absent",
    "halt-state-unreadable",
    "halt-contract-changed",
    "halt-check-changed",
    "halt-unproven",
    "halt-restarts",  # `agentcfg run`'s own endings
    "halt-until",
    "interrupted",
)
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

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "slug": self.slug,
            "started": iso(self.started),
            "engagements": self.engagements,
            "closed": self.closed,
            "proven": self.proven,
            "contract": self.contract,
            "outcome": self.outcome,
            "cut_short": self.cut_short,
            "wall_seconds": round(self.last - self.started, 3),
            "burndown": list(self.burndown),
            "tokens": {
                **self.spending.to_json(self.closed),
                "engagements": [e.to_json() for e in self.spend],
            },
        }


FLEET_EVENTS = frozenset({"leased", "lease-expired", "lease-lost", "integrated", "reopened"})


@dataclass
class Fleet:
    """What the fleets in the ledger did: steps per member, integrations, takeovers, and who
    holds which step as the ledger ends."""

    members: dict[str, collections.Counter[str]] = field(default_factory=dict)
    holding: dict[tuple[str, str], str] = field(default_factory=dict)  # (slug, step) -> member
    counts: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, name: str, event: dict[str, Any]) -> None:
        member, place = (
            str(event.get("member", "?")),
            (str(event.get("slug")), str(event.get("step"))),
        )
        self.counts[name] += 1
        if name == "reopened":
            self.counts[f"reopened-{event.get('reason')}"] += 1
        self.members.setdefault(member, collections.Counter())[name] += 1
        if name == "leased":
            self.holding[place] = member
        else:
            self.holding.pop(place, None)

    def to_json(self) -> dict[str, Any] | None:
        if not self.counts:
            return None
        return {
            "leases": self.counts["leased"],
            "integrated": self.counts["integrated"],
            "reopened": self.counts["reopened"],
            "conflicts": self.counts["reopened-conflict"],
            "reverify_failed": self.counts["reopened-reverify-failed"],
            "takeovers": self.counts["lease-expired"],
            "lost": self.counts["lease-lost"],
            "members": {
                member: {
                    "leased": c["leased"],
                    "integrated": c["integrated"],
                    "reopened": c["reopened"],
                }
                for member, c in sorted(self.members.items())
                if c["leased"]
            },
            "holding": [
                {"slug": slug, "step": step, "member": member}
                for (slug, step), member in sorted(self.holding.items())
            ],
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
            "deferred_to_quality_gate": self.events["deferred-quality-gate"],
            "paused": self.events["paused"],
            "released": {
                "total": self.events["released"],
                "inside_session": self.released_inside,
            },
            "handbacks": {
                "question": self.events["handback-question"],
                "background": self.events["handback-background"],
            },
            "shadow_would_engage": self.events["shadow-engage"],
            "cut_short_by_host": self.events["cut-short"],
            "longest_engagement_streak": self.longest_streak,
            "refusals": dict(sorted(self.refusals.items())),
            "verified": self.events["verified"],
            "marked_done": self.events["marked-done"],
            "errors": self.events["error"] + self.events["concern-error"],
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
) -> Report:
    """Fold ledger lines into a Report; lines that do not parse are counted and skipped."""
    report = Report()
    active: dict[tuple[str, str], Run] = {}
    finished: collections.deque[Run] = collections.deque(maxlen=keep)
    for raw in lines:
        report.lines += 1
        event = _event(raw)
        if event is None:
            report.skipped += 1
            continue
        at, name, key, event_slug = (
            event["_at"],
            event["event"],
            event.get("run"),
            event.get("slug"),
        )
        if since is not None and at < since:
            continue
        if slug is not None and event_slug != slug:
            continue
        if run is not None and not (isinstance(key, str) and key.startswith(run)):
            continue
        report.matched += 1
        report.events[name] += 1
        if name == "refused":
            report.refusals[str(event.get("detector"))] += 1
        if name == "released" and event.get("inside_session") is True:
            report.released_inside += 1
        if name in FLEET_EVENTS:
            report.fleet.add(name, event)
        if not isinstance(key, str) or not isinstance(event_slug, str) or name in _NOT_RUN_EVENTS:
            continue
        ident = (key, event_slug)
        current = active.pop(ident, None)  # put back last: the dict runs oldest to newest
        if current is None or name == "claimed":
            if current is not None:
                _finish(report, finished, current)
            current = Run(key, event_slug, at, at)
            report.runs_total += 1
        active[ident] = current
        _apply(report, current, name, event, at)
        if name in ENDINGS:
            current.outcome = name
        if len(active) > OPEN_RUNS:
            _finish(report, finished, active.pop(next(iter(active))))
    for leftover in active.values():
        _finish(report, finished, leftover)
    report.rows = sorted(finished, key=lambda r: r.started)[-keep:]
    return report


_NOT_RUN_EVENTS = frozenset({"verified", "marked-done", "error", "concern-error"})


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


def _apply(report: Report, run: Run, name: str, event: dict[str, Any], at: float) -> None:
    run.last = max(run.last, at)
    open_count = event.get("open")
    if type(open_count) is not int or not 0 <= open_count <= STEPS_LIMIT:
        open_count = None  # no roadmap holds that many steps: a forged count
    if open_count is not None:
        if run.last_open is not None and open_count < run.last_open:
            drop = run.last_open - open_count
            run.closed += drop
            report.closed += drop
        run.last_open = open_count
    if name == "cut-short":
        run.cut_short += 1
    proven, contract = event.get("proven"), event.get("contract")
    if _count(proven) and _count(contract):
        run.proven, run.contract = proven, contract
    if name in ("halt-contract-changed", "halt-check-changed"):
        changes = event.get("changes")
        shown = [str(c) for c in changes] if isinstance(changes, list) else []
        report.contract_changes.append(
            {"run": run.run, "slug": run.slug, "at": iso(at), "changes": shown}
        )
    if name == "engage":
        run.outcome = "running"
        run.engagements += 1
        report.engagements += 1
        run.streak += 1
        run.longest_streak = max(run.longest_streak, run.streak)
        if isinstance(open_count, int):
            run.burndown.append(open_count)
    elif name not in ("refused", "claimed", "deferred-quality-gate", "released"):
        run.streak = 0  # the agent was let go: the streak of re-engagements ends
    if "tokens" in event:  # a fire of the run: its tokens paid for the segment since the last
        _spend(report, run, name, event, open_count)


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
        if name == "engage"
        else None
    )


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _tokens(value: object) -> int | None:
    total = value.get("total") if isinstance(value, dict) else None
    return min(total, TOKENS_LIMIT) if type(total) is int and total >= 0 else None


def _finish(report: Report, finished: collections.deque[Run], run: Run) -> None:
    report.outcomes[run.outcome] += 1
    report.longest_streak = max(report.longest_streak, run.longest_streak)
    finished.append(run)


def sparkline(values: Iterable[int]) -> str:
    points = list(values)
    if not points:
        return ""
    top = max(points) or 1
    return "".join(SPARKS[min(len(SPARKS) - 1, round(v / top * (len(SPARKS) - 1)))] for v in points)
