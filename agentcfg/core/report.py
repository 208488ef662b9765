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
    "halt-wall-clock",
    "halt-stall",
    "halt-roadmap-absent",
    "halt-state-unreadable",
)
# runs seen at once before the oldest ended one is folded into the totals
OPEN_RUNS = 4096
BURNDOWN_POINTS = 64
SPARKS = "▁▂▃▄▅▆▇█"


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

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "slug": self.slug,
            "started": iso(self.started),
            "engagements": self.engagements,
            "closed": self.closed,
            "outcome": self.outcome,
            "cut_short": self.cut_short,
            "wall_seconds": round(self.last - self.started, 3),
            "burndown": list(self.burndown),
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
    rows: list[Run] = field(default_factory=list)

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
            "rows": [run.to_json() for run in self.rows],
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
    if isinstance(open_count, int) and not isinstance(open_count, bool):
        if run.last_open is not None and open_count < run.last_open:
            drop = run.last_open - open_count
            run.closed += drop
            report.closed += drop
        run.last_open = open_count
    if name == "cut-short":
        run.cut_short += 1
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
