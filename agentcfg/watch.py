"""`agentcfg watch`: the workspace's claimed runs as a live terminal table.

Data (`RunView`, read from claims, runs, roadmaps and the ledger) is kept apart from its
rendering (rich), so one frame can be printed and tested with a fixed clock.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from agentcfg import claims, controls, loading, state
from agentcfg.config import load_config
from agentcfg.contract import store as contract
from agentcfg.contract.model import judge
from agentcfg.core import events
from agentcfg.core.report import FLEET_EVENTS, TOKENS_LIMIT, Fleet, Folder, Run, settle
from agentcfg.core.roadmap import Roadmap, clip, scan
from agentcfg.core.times import format_duration, iso, parse_iso, wall_clock
from agentcfg.core.visible import visible
from agentcfg.errors import RoadmapError
from agentcfg.paths import CLAIMS, CONTRACTS, RECEIPTS, RUNS, STOPS
from agentcfg.workspace import Workspace

BAR_WIDTH = 12
STEP_WIDTH = 40
RUNS_KEPT = 4096  # runs the ledger tail remembers: far more than claims are ever live at once


@dataclass(frozen=True)
class RunView:
    """One claimed run as the table shows it."""

    slug: str
    session: str
    done: int | None  # None: the roadmap cannot be read
    total: int
    step: str | None  # the next step, "<id> <text>"
    iterations: int | None  # None: no run state
    cap: int
    started_at: float | None
    tokens: int | None  # the tokens the ledger recorded for this run; None while none is known
    last_event: str | None
    last_at: float | None
    # what the run is, as the report tells it: running | waiting until .. | idle since .. |
    # stopped by a person | complete | halted: <rung> | ...; or no run | roadmap gone
    status: str
    resume_at: float | None = None  # `agentcfg run` waits (a usage limit, its window) until then
    proven: tuple[int, int] | None = None  # (steps proven, steps contracted); None: no contract


class LedgerTail:
    """Follows the ledger from where it last read: per run, its last event and the sum of the
    tokens its fires recorded (each fire's are those of its own segment of the session).

    Memory stays bounded whatever the ledger holds: it is read a line at a time, a line past
    the ledger's line limit is passed over unread, and only the newest RUNS_KEPT runs are kept.
    """

    def __init__(self, ws: Workspace) -> None:
        self.folder = ws.state
        self._restart(None)

    def _restart(self, identity: tuple[int, int] | None) -> None:
        self.identity = identity
        self.offset = 0
        self.skipping = False  # inside an oversized line, passing over it
        self.last: dict[tuple[str, str], tuple[str, float]] = {}
        self.tokens: dict[tuple[str, str], int] = {}
        self.resumes: dict[tuple[str, str], float] = {}  # the waits of `agentcfg run`
        self.fleet = Fleet()  # fleets on the workspace's roadmaps: members, leases, integrations
        self.waits: dict[str, str] = {}  # a fleet member waiting for a step to be ready: on what
        # the report's own fold: a run's outcome is told in one place, for every view
        self.runs = Folder(keep=1)

    def read(self) -> None:
        """Take in the lines appended since the last read (all of them after a rotation)."""
        handle = state.open_ledger(self.folder)
        if handle is None:
            return
        with handle:
            info = os.fstat(handle.fileno())
            if (info.st_dev, info.st_ino) != self.identity or info.st_size < self.offset:
                self._restart((info.st_dev, info.st_ino))
            try:
                handle.seek(self.offset)
                while line := handle.readline(state.LEDGER_LINE_LIMIT + 1):
                    ended = line.endswith(b"\n")
                    if self.skipping or len(line) > state.LEDGER_LINE_LIMIT:
                        self.offset += len(line)
                        self.skipping = not ended
                    elif not ended:
                        break  # a line being written waits for the next read
                    else:
                        self.offset += len(line)
                        self._take(line)
                        self.runs.take(line)
            except OSError:
                return

    def _take(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict):
            return
        if event.get("event") == events.WAITING:
            self.waits[str(event.get("member", "?"))] = waited(event)
            return
        if event.get("event") in FLEET_EVENTS:
            self.fleet.add(str(event["event"]), event)
            self.waits.pop(str(event.get("member", "?")), None)
            return
        if event.get("event") == events.FLEET_END:
            self.waits.clear()
        key = (event.get("run"), event.get("slug"))
        at = parse_iso(event.get("at"))
        if not all(isinstance(k, str) for k in key) or at is None:
            return
        run = (str(key[0]), str(key[1]))
        if event.get("event") == events.CLAIMED:  # a fresh run: what the last one spent is not its
            self.tokens.pop(run, None)
        self.last.pop(run, None)  # moved to the end: the dict runs from oldest to newest
        self.last[run] = (str(event.get("event")), at)
        resume_at = parse_iso(event.get("resume_at"))
        if resume_at is not None:
            self.resumes[run] = resume_at
        tokens = event.get("tokens")
        total = tokens.get("total") if isinstance(tokens, dict) else None
        if type(total) is int and total >= 0:
            self.tokens[run] = self.tokens.get(run, 0) + min(total, TOKENS_LIMIT)
        if len(self.last) > RUNS_KEPT:
            oldest = next(iter(self.last))
            del self.last[oldest]
            self.tokens.pop(oldest, None)
            self.resumes.pop(oldest, None)


def snapshot(
    ws: Workspace, env: Mapping[str, str], ledger: LedgerTail, now: float | None = None
) -> list[RunView]:
    """Every live claim of the workspace as a RunView, in the order `sessions list` gives;
    each run as the ledger tells it at `now`."""
    ledger.read()
    cap_default = load_config(ws, env).max_iterations
    return [_view(ws, c, ledger, cap_default, now) for c in claims.all_claims(ws)]


def status(run: Run, now: float | None) -> str:
    """A run's outcome as the table shows it, in a few words: the report's own judgement."""
    outcome, _words = settle(run, now)
    if outcome == "waiting" and run.resume_at is not None:
        return f"waiting until {iso(run.resume_at)[11:16]}"
    if outcome == "idle":
        return f"idle since {iso(run.last)[11:16]}"
    if outcome == events.STOPPED:
        return "stopped by a person"
    if outcome.startswith("halt-"):
        return f"halted: {outcome}"
    if outcome == events.COMPLETE and run.evidence:
        return f"complete: {run.evidence}"
    return outcome


def _view(
    ws: Workspace, claim: claims.Claim, ledger: LedgerTail, cap: int, now: float | None = None
) -> RunView:
    done: int | None = None
    total, step, proven = 0, None, None
    try:
        roadmap = loading.load(ws, claim.slug)
        proven = _proven(ws, claim, roadmap)
        found = scan(roadmap)
        counts = found.counts
        done, total = counts.done, counts.done + counts.open + counts.blocked
        step = (
            f"{found.next.id} {clip(visible(found.next.text), STEP_WIDTH)}" if found.next else None
        )
    except RoadmapError:
        pass
    run = claims.read_run(ws, claim)
    last = ledger.last.get((claim.key, claim.slug))
    told = ledger.runs.current(claim.key, claim.slug)
    if claims.is_stale(ws, claim):
        said = "roadmap gone"
    elif told is not None:
        said = status(told, now)
    elif controls.read_stop(ws, claim.slug) is not None:
        said = "stopped by a person"
    elif run is None:
        said = "no run"
    else:
        said = f"halted: {run.halted}" if run.halted else run.ended or "running"
    return RunView(
        slug=claim.slug,
        session=claim.session_id,
        done=done,
        total=total,
        step=step,
        iterations=run.iterations if run else None,
        cap=claim.max_iterations or cap,
        started_at=run.started_at if run else None,
        tokens=ledger.tokens.get((claim.key, claim.slug)),
        last_event=last[0] if last else None,
        last_at=last[1] if last else None,
        status=said,
        resume_at=ledger.resumes.get((claim.key, claim.slug)),
        proven=proven,
    )


def _proven(ws: Workspace, claim: claims.Claim, roadmap: Roadmap) -> tuple[int, int] | None:
    found, _problem = contract.read(ws, claim.key, claim.slug)
    if found is None:
        return None
    judged = judge(found, roadmap, contract.read_receipts(ws, claim.slug), wall_clock())
    return judged.proven, judged.total


NARROW = 80  # under this many columns the table keeps only what matters most


def render(views: list[RunView], now: float, width: int | None = None) -> Table:
    """The table of claimed runs; under NARROW columns, the roadmap and its state, progress,
    iteration, tokens and last event only, the progress bar shorter."""
    narrow = width is not None and width < NARROW
    table = Table(
        title=f"agentcfg watch · {len(views)} claimed run{'' if len(views) == 1 else 's'}",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    columns = (
        ("roadmap", "left"),
        ("progress", "left"),
        ("next step", "left"),
        ("iteration", "right"),
        ("elapsed", "right"),
        ("tokens", "right"),
        ("last event", "left"),
    )
    shown = [c for c in columns if not narrow or c[0] not in ("next step", "elapsed")]
    for name, justify in shown:
        wraps = name == "next step" or (narrow and name in ("progress", "last event"))
        table.add_column(name, justify=justify, no_wrap=not wraps)  # type: ignore[arg-type]
    for view in views:
        cells: dict[str, Text | str] = {
            "roadmap": Text.assemble(
                (visible(view.slug), "bold"), "\n", (visible(view.session[:12]), "dim")
            ),
            "progress": _progress(view, BAR_WIDTH // 2 if narrow else BAR_WIDTH),
            "next step": Text(visible(view.step or "-")),  # Text: roadmap text is never markup
            "iteration": "-" if view.iterations is None else f"{view.iterations}/{view.cap}",
            "elapsed": "-" if view.started_at is None else format_duration(now - view.started_at),
            "tokens": "-" if view.tokens is None else f"{view.tokens:,}",
            "last event": Text(visible(_last(view, now))),
        }
        table.add_row(*(cells[name] for name, _ in shown))
    if not views:
        table.add_row("no claimed runs", *[""] * (len(shown) - 1))
    return table


def waited(event: dict[str, Any]) -> str:
    """A `waiting` event in a few words: `waiting: 1.2 waits for 1.1`."""
    waits = event.get("waits")
    parts = [
        f"{step} waits for {', '.join(map(str, on))}"
        for step, on in (waits.items() if isinstance(waits, dict) else ())
        if isinstance(on, list)
    ]
    busy = event.get("in_progress")
    if not parts and isinstance(busy, list):
        parts = [f"{', '.join(map(str, busy))} in progress"]
    return "waiting: " + ("; ".join(parts[:2]) + ("; ..." if len(parts) > 2 else "") or "-")


def fleet_table(
    fleet: dict[str, Any] | None,
    now: float,
    width: int | None = None,
    waits: dict[str, str] | None = None,
) -> Table | None:
    """The fleets' members, who holds which step now (or what a member waits for), and each
    member's lane: its leases on one time axis from the fleet's first lease to now. None when
    the ledger saw no fleet. Under NARROW columns the lanes are shorter and only integrations
    are counted."""
    if not fleet:
        return None
    narrow = width is not None and width < NARROW
    lanes = {member: _spans(spans) for member, spans in fleet.get("lanes", {}).items()}
    start = min((span[1] for spans in lanes.values() for span in spans), default=now)
    table = Table(
        title=f"fleet · {fleet['integrated']} integrated, {fleet['reopened']} reopened, "
        f"{fleet['takeovers']} taken over",
        caption=f"lanes since {_clock(start)}: " + "  ".join(
            f"{mark} {word}" for word, (mark, _style) in LANE_MARKS.items()
        ),
        caption_justify="left",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )  # fmt: skip
    columns = ("member", "leased", "integrated", "reopened", "holding now", "lane")
    shown = [name for name in columns if not (narrow and name in ("leased", "reopened"))]
    for name in shown:
        left = name in ("member", "holding now", "lane")
        table.add_column(name, justify="left" if left else "right", no_wrap=name == "lane")
    holding: dict[str, list[str]] = {}
    for held in fleet["holding"]:
        holding.setdefault(held["member"], []).append(f"{held['slug']} {held['step']}")
    cells = LANE_WIDTH // 2 if narrow else LANE_WIDTH
    members = dict(fleet["members"])
    for member in sorted(waits or {}):  # a member that has waited from the start
        members.setdefault(member, {"leased": 0, "integrated": 0, "reopened": 0})
    for member, done in members.items():
        doing = ", ".join(holding.get(member, [])) or (waits or {}).get(member) or "-"
        row: dict[str, Text | str] = {
            "member": Text(visible(member)),
            "leased": str(done["leased"]),
            "integrated": str(done["integrated"]),
            "reopened": str(done["reopened"]),
            "holding now": Text(visible(doing)),
            "lane": _lane(lanes.get(member, []), start, now, cells),
        }
        table.add_row(*(row[name] for name in shown))
    return table


LANE_WIDTH = 32  # cells of a member's lane on a wide screen
# how a lease ended, as its cells on a lane show it; a lease still held has no ending yet
LANE_MARKS = {
    "integrated": ("█", "green"),
    "holding": ("▓", "cyan"),
    "reopened": ("▒", "red"),
    "taken over": ("░", "yellow"),
}
_ENDED_AS = {None: "holding", "integrated": "integrated", "reopened": "reopened"}


def _spans(spans: list[dict[str, Any]]) -> list[tuple[str, float, float | None, str]]:
    """A lane's leases as (step, from, until or None, how it shows), those with a time."""
    found = []
    for span in spans:
        began, until = parse_iso(span.get("from")), parse_iso(span.get("until"))
        if began is not None:
            how = _ENDED_AS.get(span.get("ended"), "taken over")
            found.append((str(span.get("step")), began, until, how))
    return found


def _lane(
    spans: list[tuple[str, float, float | None, str]], start: float, now: float, cells: int
) -> Text:
    """One member's leases on `cells` characters from `start` to `now`: each lease fills the
    cells of its time (one at least), a later lease drawn over an earlier one."""
    shown: list[tuple[str, str]] = [("·", "dim")] * cells
    scale = cells / max(now - start, 1e-9)
    for _step, began, until, how in spans:
        first = min(cells - 1, max(0, int((began - start) * scale)))
        last = min(cells, max(first + 1, math.ceil(((until or now) - start) * scale)))
        shown[first:last] = [LANE_MARKS[how]] * (last - first)
    return Text.assemble(*shown)


def _clock(at: float) -> str:
    return iso(at)[11:16]


def _progress(view: RunView, bar: int = BAR_WIDTH) -> Text:
    if view.done is None:
        return Text(f"unreadable\n{view.status}", "red")
    filled = round(bar * view.done / view.total) if view.total else 0
    text = Text.assemble(
        ("█" * filled, "green"), ("░" * (bar - filled), "dim"), f" {view.done}/{view.total}"
    )
    style = (
        ""
        if view.status == "running"
        else "yellow"
        if view.status.startswith(("stopped", "waiting"))
        else "green"
        if view.status == "complete"
        else "cyan"
    )
    text.append(f"\n{view.status}", style)
    if view.proven is not None:
        text.append(f"\nproven {view.proven[0]}/{view.proven[1]}", "dim")
    return text


def _last(view: RunView, now: float) -> str:
    if view.last_event is None or view.last_at is None:
        return "-"
    if view.last_event.startswith("paused-") and view.resume_at is not None:
        return f"{view.last_event}\nresumes in {format_duration(max(0.0, view.resume_at - now))}"
    return f"{view.last_event}\n{format_duration(now - view.last_at)} ago"


def frame(ws: Workspace, env: Mapping[str, str], now: float, width: int | None = None) -> str:
    """One frame as plain text: `watch --once`."""
    console = Console(width=width or 100, no_color=True, highlight=False, force_terminal=False)
    ledger = LedgerTail(ws)
    with console.capture() as captured:
        console.print(_screen(snapshot(ws, env, ledger, now), ledger, now, console.width))
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def follow(
    ws: Workspace,
    env: Mapping[str, str],
    clock: Callable[[], float] = wall_clock,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    read: Callable[[Workspace, Mapping[str, str], LedgerTail, float], list[RunView]] = snapshot,
) -> None:
    """Redraw while the ledger, a claim, a run or a roadmap changes; return on Ctrl-C.
    The runs are read again only when something changed."""
    ledger = LedgerTail(ws)
    seen: object = None
    views: list[RunView] = []
    try:
        with Live(render(views, clock()), auto_refresh=False, transient=False) as live:
            while True:
                now_seen = _signature(ws)
                if now_seen != seen:
                    seen, views = now_seen, read(ws, env, ledger, clock())
                width = live.console.width
                live.update(_screen(views, ledger, clock(), width), refresh=True)  # ages move on
                sleep(interval)
    except KeyboardInterrupt:
        return


def _screen(
    views: list[RunView], ledger: LedgerTail, now: float, width: int | None = None
) -> RenderableType:
    fleet = fleet_table(ledger.fleet.to_json(), now, width, ledger.waits)
    runs = render(views, now, width)
    return runs if fleet is None else Group(runs, fleet)


def _signature(ws: Workspace) -> Any:
    """What changes when anything the table shows does: names, sizes and times of the files."""
    found = []
    watched = (CLAIMS, RUNS, STOPS, CONTRACTS, RECEIPTS)
    for folder in (ws.roadmaps, ws.state, *(ws.state / n for n in watched)):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            try:
                info = os.stat(folder / name)
            except OSError:
                continue
            found.append((str(folder / name), info.st_size, info.st_mtime_ns))
    return found
