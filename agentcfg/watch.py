"""`agentcfg watch`: the workspace's claimed runs as a live terminal table.

Data (`RunView`, read from claims, runs, roadmaps and the ledger) is kept apart from its
rendering (rich), so one frame can be printed and tested with a fixed clock.
"""

from __future__ import annotations

import json
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

from agentcfg import claims, contract, controls, loading, state
from agentcfg.config import load_config
from agentcfg.core.contract import judge
from agentcfg.core.report import FLEET_EVENTS, TOKENS_LIMIT, Fleet
from agentcfg.core.roadmap import Roadmap, clip, scan
from agentcfg.core.times import format_duration, parse_iso
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
    status: str  # running | halted: <rung> | stopped | no run | roadmap gone
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
            except OSError:
                return

    def _take(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict):
            return
        if event.get("event") in FLEET_EVENTS:
            self.fleet.add(str(event["event"]), event)
            return
        key = (event.get("run"), event.get("slug"))
        at = parse_iso(event.get("at"))
        if not all(isinstance(k, str) for k in key) or at is None:
            return
        run = (str(key[0]), str(key[1]))
        if event.get("event") == "claimed":  # a fresh run: what the last one spent is not its
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


def snapshot(ws: Workspace, env: Mapping[str, str], ledger: LedgerTail) -> list[RunView]:
    """Every live claim of the workspace as a RunView, in the order `sessions list` gives."""
    ledger.read()
    cap_default = load_config(ws, env).max_iterations
    return [_view(ws, c, ledger, cap_default) for c in claims.all_claims(ws)]


def _view(ws: Workspace, claim: claims.Claim, ledger: LedgerTail, cap: int) -> RunView:
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
    if claims.is_stale(ws, claim):
        status = "roadmap gone"
    elif controls.read_stop(ws, claim.slug) is not None:
        status = "stopped"
    elif run is None:
        status = "no run"
    else:
        status = f"halted: {run.halted}" if run.halted else "running"
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
        status=status,
        resume_at=ledger.resumes.get((claim.key, claim.slug)),
        proven=proven,
    )


def _proven(ws: Workspace, claim: claims.Claim, roadmap: Roadmap) -> tuple[int, int] | None:
    found, _problem = contract.read(ws, claim.key, claim.slug)
    if found is None:
        return None
    judged = judge(found, roadmap, contract.read_receipts(ws, claim.slug), time.time())
    return judged.proven, judged.total


def render(views: list[RunView], now: float) -> Table:
    table = Table(
        title=f"agentcfg watch · {len(views)} claimed run{'' if len(views) == 1 else 's'}",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for name, justify in (
        ("roadmap", "left"),
        ("progress", "left"),
        ("next step", "left"),
        ("iteration", "right"),
        ("elapsed", "right"),
        ("tokens", "right"),
        ("last event", "left"),
    ):
        table.add_column(name, justify=justify, no_wrap=name != "next step")  # type: ignore[arg-type]
    for view in views:
        table.add_row(
            Text.assemble((visible(view.slug), "bold"), "\n", (visible(view.session[:12]), "dim")),
            _progress(view),
            Text(visible(view.step or "-")),  # Text, not a str: roadmap text is never markup
            "-" if view.iterations is None else f"{view.iterations}/{view.cap}",
            "-" if view.started_at is None else format_duration(now - view.started_at),
            "-" if view.tokens is None else f"{view.tokens:,}",
            Text(visible(_last(view, now))),
        )
    if not views:
        table.add_row("no claimed runs", *[""] * 6)
    return table


def fleet_table(fleet: dict[str, Any] | None) -> Table | None:
    """The fleets' members and who holds which step now; None when the ledger saw no fleet."""
    if not fleet:
        return None
    table = Table(
        title=f"fleet · {fleet['integrated']} integrated, {fleet['reopened']} reopened, "
        f"{fleet['takeovers']} taken over",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    for name in ("member", "leased", "integrated", "reopened", "holding now"):
        table.add_column(name, justify="left" if name in ("member", "holding now") else "right")
    holding: dict[str, list[str]] = {}
    for held in fleet["holding"]:
        holding.setdefault(held["member"], []).append(f"{held['slug']} {held['step']}")
    for member, done in fleet["members"].items():
        table.add_row(
            Text(visible(member)), str(done["leased"]), str(done["integrated"]),
            str(done["reopened"]), Text(visible(", ".join(holding.get(member, [])) or "-")),
        )  # fmt: skip
    return table


def _progress(view: RunView) -> Text:
    if view.done is None:
        return Text("unreadable", "red")
    filled = round(BAR_WIDTH * view.done / view.total) if view.total else 0
    text = Text.assemble(
        ("█" * filled, "green"), ("░" * (BAR_WIDTH - filled), "dim"), f" {view.done}/{view.total}"
    )
    style = {"running": "", "stopped": "yellow"}.get(view.status, "cyan")
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
        console.print(_screen(snapshot(ws, env, ledger), ledger, now))
    return "".join(line.rstrip() + "\n" for line in captured.get().splitlines())


def follow(
    ws: Workspace,
    env: Mapping[str, str],
    clock: Callable[[], float] = time.time,
    interval: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    read: Callable[[Workspace, Mapping[str, str], LedgerTail], list[RunView]] = snapshot,
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
                    seen, views = now_seen, read(ws, env, ledger)
                live.update(_screen(views, ledger, clock()), refresh=True)  # ages move on
                sleep(interval)
    except KeyboardInterrupt:
        return


def _screen(views: list[RunView], ledger: LedgerTail, now: float) -> RenderableType:
    fleet = fleet_table(ledger.fleet.to_json())
    runs = render(views, now)
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
