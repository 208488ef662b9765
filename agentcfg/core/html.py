"""The report as one self-contained XHTML page: a summary strip, then per run its timeline on a
time axis (engagements, waits, restarts, the open steps down to where the run ended), its tokens
per engagement and who closed each step; a fleet as one lane per member. Pure: the report's JSON
data in, text out.

The page needs no network and no script; it parses as XML, so tests read it back. It reads in
light and dark (prefers-color-scheme) and in print.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from agentcfg.core import events
from agentcfg.core.evidence import EXPLAINED
from agentcfg.core.texts import plural
from agentcfg.core.times import format_duration, iso, parse_iso

WIDTH, HEIGHT, PAD = 480, 140, 24
# the timeline: its width, the left margin for the axis labels, the plot's top and bottom
LINE_W, LEFT, RIGHT, TOP, PLOT = 720, 76, 16, 14, 96
# tick spacings a time axis chooses from, in seconds: the first that gives at most 6 ticks
TICKS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
         86400, 172800, 604800)  # fmt: skip
# how an outcome reads, and its colour's class
KINDS = {"complete": "good", "blocked": "warn", "stopped": "person", "waiting": "warn",
         "running": "live", "idle": "quiet", "released": "quiet", "paused": "quiet",
         "interrupted": "person"}  # fmt: skip
WAIT_WORDS = {
    "paused-usage-limit": "waiting for the usage limit to reset",
    "paused-window": "waiting for its window",
    "paused-quota": "waiting for a usage window to reset (the reserve)",
    "stopped": "stopped by a person",
}
WAIT_LABELS = {"paused-usage-limit": "usage limit", "paused-window": "window",
               "paused-quota": "reserve", "stopped": "stopped by a person"}  # fmt: skip
# characters XML cannot hold: a hostile ledger's text is shown with a replacement mark
_CONTROL = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF], "\ufffd")
STYLE = """
:root { --fg: #1d2125; --muted: #5f6b76; --rule: #d9dee3; --bg: #fff; --panel: #f5f7f9;
  --good: #1e8e3e; --warn: #b26a00; --bad: #c5221f; --person: #7b3fbf; --live: #1a66d2;
  --quiet: #6b7785; --accent: #1a66d2; --wait: rgba(178, 106, 0, 0.16);
  --stop: rgba(123, 63, 191, 0.18); --window: rgba(26, 102, 210, 0.12); }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e4e8ec; --muted: #9aa6b2; --rule: #3a424b; --bg: #15191d; --panel: #1e242a;
    --good: #5cc878; --warn: #f0a840; --bad: #ff6b61; --person: #b88ef0; --live: #6ea8ff;
    --quiet: #9aa6b2; --accent: #6ea8ff; --wait: rgba(240, 168, 64, 0.22);
    --stop: rgba(184, 142, 240, 0.25); --window: rgba(110, 168, 255, 0.18); }
}
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 64em;
  padding: 0 1em; color: var(--fg); background: var(--bg); }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin: 0 0 0.4em; }
h2 small { color: var(--muted); font-weight: normal; }
p.lede, .said, figcaption, .note { color: var(--muted); }
.strip { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 1em 0 1.5em; padding: 0; }
.strip li { list-style: none; background: var(--panel); border-radius: 6px;
  padding: 0.5em 0.9em; min-width: 7em; }
.strip b { display: block; font-size: 1.35em; }
.strip span { color: var(--muted); font-size: 12px; }
.outcome { font-weight: 600; }
.strip .evidence { font-weight: 600; }
.strip .red-green { color: var(--good); } .strip .vacuous, .strip .agent-check { color: var(--warn); }
.good { color: var(--good); } .warn { color: var(--warn); } .bad { color: var(--bad); }
.person { color: var(--person); } .live { color: var(--live); } .quiet { color: var(--quiet); }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 0.2em 0.7em; border-bottom: 1px solid var(--rule); text-align: right; }
th { color: var(--muted); font-weight: 600; }
th:nth-child(-n+4), td:nth-child(-n+4) { text-align: left; }
tr.totals td { font-weight: bold; border-top: 2px solid var(--muted); }
table.closes th, table.closes td { text-align: left; }
section.run, section.fleet { margin-top: 2em; padding: 1em 1.2em; border: 1px solid var(--rule);
  border-radius: 8px; break-inside: avoid; }
section.run.empty { padding: 0.6em 1.2em; }
dl { display: grid; grid-template-columns: repeat(auto-fill, minmax(13em, 1fr));
  gap: 0.2em 1.2em; margin: 0.6em 0; }
dl div { display: flex; justify-content: space-between; gap: 0.6em;
  border-bottom: 1px dotted var(--rule); }
dt { color: var(--muted); }
dd { margin: 0; text-align: right; }
figure { margin: 0.8em 0; }
figure.tokens { max-width: 480px; }
svg { width: 100%; height: auto; display: block; }
svg text { font-size: 10px; fill: var(--muted); }
svg .axis { stroke: var(--muted); stroke-width: 1; }
svg .grid { stroke: var(--rule); stroke-width: 1; }
svg text.on-lease { fill: #fff; font-weight: 600; }
svg text.wait-label { fill: var(--fg); font-weight: 600; }
.line { fill: none; stroke: var(--accent); stroke-width: 2; }
.point { fill: var(--accent); }
.engage { fill: var(--accent); }
.engage.waste { fill: var(--bad); }
.close { fill: var(--good); stroke: var(--bg); stroke-width: 1; }
.wait { fill: var(--wait); }
.wait.stopped { fill: var(--stop); }
.wait.paused-window { fill: var(--window); }
.restart { stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 4 3; }
.bar { fill: var(--accent); }
.bar.waste { fill: var(--bad); }
.bar.unknown { fill: var(--quiet); }
.lease { fill: var(--accent); }
.lease.integrated { fill: var(--good); }
.lease.reopened { fill: var(--bad); }
.lease.expired, .lease.lease-lost { fill: var(--quiet); }
.legend { font-size: 12px; color: var(--muted); }
.legend i { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: -0.1em;
  margin: 0 0.3em 0 0.9em; border-radius: 2px; }
.legend i.wait { background: var(--wait); } .legend i.stopped { background: var(--stop); }
.legend i.engage { background: var(--accent); } .legend i.waste { background: var(--bad); }
.legend i.close { background: var(--good); } .legend i.quiet { background: var(--quiet); } .legend i.restart { border-left: 2px dashed var(--bad); }
@media print {
  body { max-width: none; margin: 0; color: #000; background: #fff; }
  section.run, section.fleet { border-color: #999; }
  a { color: inherit; text-decoration: none; }
}
"""


def render(data: dict[str, Any], repository: str = "this workspace") -> str:
    """The page for `report --json`'s data: every figure on it is one of that data's."""
    rows = data["rows"]
    runs = "".join(_section(n, row) for n, row in enumerate(rows, 1))
    shown = f"; the newest {len(rows)} shown" if len(rows) < data["runs"] else ""
    title = f"agentcfg report — {_text(repository)}"
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">\n'
        '<head><meta charset="utf-8"/><meta name="viewport" content="width=device-width"/>'
        f'<meta name="color-scheme" content="light dark"/><title>{title}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n<h1>{title}</h1>\n"
        f'<p class="lede">{plural(data["runs"], "run")} from '
        f"{plural(data['matched'], 'ledger event')}{shown}; times are UTC.</p>\n"
        f"{_strip(data)}\n{_summary(data)}\n{_fleet(data.get('fleet'))}{runs}{_changed(data)}"
        "</body>\n</html>\n"
    )


def outcome_class(outcome: str) -> str:
    """The colour an outcome is shown in: good, warn, bad, person, live or quiet."""
    return KINDS.get(outcome, "bad" if outcome.startswith("halt-") else "quiet")


def _outcome(outcome: str, tag: str = "span") -> str:
    return f'<{tag} class="outcome {outcome_class(outcome)}">{_text(outcome)}</{tag}>'


def _strip(data: dict[str, Any]) -> str:
    """The summary strip: runs, outcomes, steps proven, tokens and wall time at a glance."""
    outcomes = ", ".join(
        f'<span class="{outcome_class(name)}">{n} {_text(name)}</span>'
        for name, n in data["outcomes"].items()
    )
    proven = data.get("proven")
    cards = [
        ("runs", _number(data["runs"]), outcomes or "none"),
        ("steps closed", _number(data["steps_closed"]),
         f"in {plural(data['engagements'], 'engagement')}"),
        ("steps proven", "-" if proven is None else
         f"{_number(proven['proven'])} of {_number(proven['contract'])}", _evidence(data)),
        ("tokens", _number(data["tokens"]["total"]),
         f"{_number(data['tokens']['waste'])} closed nothing"),
        ("wall time", format_duration(data.get("wall_seconds", 0.0)), "summed over runs"),
    ]  # fmt: skip
    items = "".join(
        f'<li class="{name.replace(" ", "-")}"><span>{name}</span><b>{value}</b>'
        f"<span>{note}</span></li>"
        for name, value, note in cards
    )
    return f'<ul class="strip">{items}</ul>'


def _evidence(data: dict[str, Any]) -> str:
    """What the complete runs' proofs show, a word each: `2 red-green, 1 vacuous`."""
    words = data.get("evidence") or {}
    told = ", ".join(
        f'<span class="evidence {_text(word)}" title="{_text(EXPLAINED[word])}">'
        f"{_number(n)} {_text(word)}</span>"
        for word, n in words.items()
        if word in EXPLAINED
    )
    return told or "by a receipt"


def _fleet(fleet: dict[str, Any] | None) -> str:
    """The fleet's figures, a lane per member on a time axis, who holds which step, and each
    fleet's members with what they did and cost."""
    if not fleet:
        return ""
    holding = ", ".join(
        f"{_text(held['slug'])} {_text(held['step'])}: member {_text(held['member'])}"
        for held in fleet["holding"]
    )
    return (
        f'<section class="fleet">\n<h2>Fleet</h2>\n<p>{_number(fleet["integrated"])} steps '
        f"integrated, {_number(fleet['reopened'])} reopened ({_number(fleet['conflicts'])} "
        f"conflicts, {_number(fleet['reverify_failed'])} failed re-verify), "
        f"{_number(fleet['takeovers'])} leases taken over after expiry.</p>\n"
        f"{lanes(fleet.get('lanes') or {})}"
        + "".join(_members(one) for one in fleet.get("fleets") or [])
        + (f"<p>Holding now: {holding}.</p>\n" if holding else "")
        + "</section>\n"
    )


MEMBER_COLUMNS = ("member", "steps", "leased", "tokens", "waits", "reopened", "takeovers", "time")


def _members(fleet: dict[str, Any]) -> str:
    """One fleet: its wall time against its members' time, and a row per member."""
    rows = "".join(
        _tr("", [("member", _text(name)), ("steps", _number(m["steps"])),
                 ("leased", _number(m["leased"])), ("tokens", _number(m["tokens"])),
                 ("waits", _number(m["waits"])), ("reopened", _number(m["reopened"])),
                 ("takeovers", _number(m["takeovers"])),
                 ("time", format_duration(m["seconds"]) if m["runs"] else "-")])
        for name, m in fleet["members"].items()
    )  # fmt: skip
    wall, summed = fleet["wall_seconds"], fleet["member_seconds"]
    agents = fleet["agents"]
    ended = (
        f"ended {_text(fleet['ending'] or 'unknown')} at {_when(fleet['ended'])}"
        if fleet["ended"]
        else "no end recorded"
    )
    spent = (
        "unknown (no member run recorded)"
        if summed is None
        else format_duration(summed) + (f" ({summed / wall:.1f}× the wall time)" if wall else "")
    )
    head = "".join(f"<th>{name}</th>" for name in MEMBER_COLUMNS)
    return (
        f"<h3>Fleet on {_text(fleet['slug'])} from {_when(fleet['started'])}"
        + (f", {_number(agents)} members" if agents is not None else "")
        + f"</h3>\n<p>{ended}. Wall time {format_duration(wall)}; the members' time {spent}.</p>\n"
        f'<table class="members"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>\n'
    )


def lanes(found: dict[str, list[dict[str, Any]]]) -> str:
    """One lane per fleet member: each lease a bar from its lease to its end, coloured by how
    it ended (integrated, reopened, taken over), on one time axis."""
    spans = [
        (member, span, start, parse_iso(span["until"]))
        for member, held in found.items()
        for span in held
        if (start := parse_iso(span["from"])) is not None
    ]
    if not spans:
        return ""
    first = min(start for _, _, start, _ in spans)
    last = max(max(start, end or start) for _, _, start, end in spans)
    axis = Axis(first, last)
    row_h = 26
    height = TOP + row_h * len(found) + 34
    drawn = []
    for i, member in enumerate(found):
        y = TOP + i * row_h
        drawn.append(
            f'<text class="lane" x="{LEFT - 6}" y="{y + 16}" text-anchor="end">'
            f"member {_text(member)}</text>"
            f'<line class="grid" x1="{LEFT}" y1="{y + row_h - 2}" x2="{LINE_W - RIGHT}" '
            f'y2="{y + row_h - 2}"/>'
        )
    order = list(found)
    for member, span, start, end in spans:
        y = TOP + order.index(member) * row_h + 4
        x0, x1 = axis.x(start), axis.x(end if end is not None else last)
        how = span["ended"] or "holding"
        drawn.append(
            f'<rect class="lease {_text(how)}" x="{x0:.1f}" y="{y}" '
            f'width="{max(3.0, x1 - x0):.1f}" height="{row_h - 10}" rx="3">'
            f"<title>member {_text(member)}: step {_text(span['step'])} from {_at(start)}"
            f"{'' if end is None else ' until ' + _at(end)} ({_text(how)})</title></rect>"
            f'<text class="on-lease" x="{x0 + 3:.1f}" y="{y + 12}">{_text(span["step"])}</text>'
        )
    drawn.append(axis.draw(TOP + row_h * len(found) + 2))
    legend = (
        '<p class="legend"><i class="close"></i>integrated<i class="waste"></i>reopened'
        '<i class="engage"></i>holding<i class="quiet"></i>taken over or lost</p>'
    )
    return (
        '<figure class="lanes"><figcaption>Each member\'s leases over time</figcaption>'
        f"{_svg(''.join(drawn), LINE_W, height, 'fleet lanes')}{legend}</figure>\n"
    )


def _proven(row: dict[str, Any]) -> str:
    contract = row.get("contract")
    return "-" if contract is None else f"{_number(row['proven'])} of {_number(contract)}"


def _changed(data: dict[str, Any]) -> str:
    """Every run halted because its contract changed: the changes, for the person to decide."""
    halts = data.get("contract_changed") or []
    if not halts:
        return ""
    items = "".join(
        f"<li>run {_text(h['run'][:8])} on <code>{_text(h['slug'])}</code> at {_text(h['at'])}:"
        f"<ul>{''.join(f'<li>{_text(c)}</li>' for c in h['changes'])}</ul></li>"
        for h in halts
    )
    return (
        '<section class="contract-changed">\n<h2>Contract changed</h2>\n'
        "<p>Each change halted its run: undo it, or accept it with "
        f"<code>agentcfg roadmap trust &lt;slug&gt;</code>.</p>\n<ul>{items}</ul>\n</section>\n"
    )


def _summary(data: dict[str, Any]) -> str:
    head = "".join(
        f"<th>{name}</th>"
        for name in ("run", "roadmap", "started", "outcome", "engagements", "steps closed",
                     "tokens", "per step closed", "waste")
    )  # fmt: skip
    body = "".join(
        _tr(
            "",
            [
                ("run", f'<a href="#{_anchor(n, row)}">{_text(row["run"][:8])}</a>'),
                ("slug", _text(row["slug"])),
                ("started", _text(row["started"].replace("T", " ").rstrip("Z"))),
                ("outcome", _text(row["outcome"])),
                *_figures(row["engagements"], row["closed"], row["tokens"]),
            ],
            outcome_class(row["outcome"]),
        )
        for n, row in enumerate(data["rows"], 1)
    )
    totals = _tr(
        "totals",
        [("label", "all runs"), ("", ""), ("", ""), ("", ""),
         *_figures(data["engagements"], data["steps_closed"], data["tokens"])],
    )  # fmt: skip
    return (
        f'<table class="summary"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}{totals}</tbody></table>"
    )


def _figures(engagements: int, closed: int, tokens: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("engagements", _number(engagements)),
        ("closed", _number(closed)),
        ("tokens", _number(tokens["total"])),
        ("per-step", _number(tokens["per_step_closed"])),
        ("waste", _number(tokens["waste"])),
    ]


def _tr(kind: str, cells: list[tuple[str, str]], tone: str = "") -> str:
    row = "".join(
        f'<td class="outcome {tone}">{value}</td>'
        if name == "outcome" and tone
        else f"<td class={quoteattr(name)}>{value}</td>"
        if name
        else "<td/>"
        for name, value in cells
    )
    return f"<tr class={quoteattr(kind)}>{row}</tr>" if kind else f"<tr>{row}</tr>"


def _section(n: int, row: dict[str, Any]) -> str:
    tokens = row["tokens"]
    costliest = tokens["costliest"]
    top = (
        f"{_number(costliest['tokens'])} (engagement {costliest['engagement']}"
        + (f", step {_text(costliest['step'])}" if costliest["step"] else "")
        + ")"
        if costliest
        else "-"
    )
    facts = [
        ("outcome", "outcome", _text(row["outcome"])),
        ("engagements", "engagements", _number(row["engagements"])),
        ("closed", "steps closed", _number(row["closed"])),
        ("proven", "steps proven of its contract", _proven(row)),
        ("tokens", "tokens", _number(tokens["total"])),
        ("per-step", "tokens per step closed", _number(tokens["per_step_closed"])),
        ("waste", "tokens that closed nothing", _number(tokens["waste"])),
        ("unknown", "fires with tokens unknown", _number(tokens["unknown"])),
        ("costliest", "costliest engagement", top),
        ("wall", "wall time", format_duration(row["wall_seconds"])),
    ]
    listing = "".join(
        f"<div><dt>{label}</dt><dd class={quoteattr(name)}>{value}</dd></div>"
        for name, label, value in facts
    )
    head = (
        f'<section class="run{"" if _eventful(row) else " empty"}" id="{_anchor(n, row)}" '
        f"data-run={quoteattr(_clean(row['run']))} "
        f"data-outcome={quoteattr(_clean(row['outcome']))}>\n"
        f"<h2>{_text(row['slug'])} {_outcome(row['outcome'])} <small>run "
        f"{_text(row['run'][:8])}, started {_at(parse_iso(row['started']))}</small></h2>\n"
        f'<p class="said">{_text(row.get("said") or row["outcome"])}</p>\n'
    )
    if not _eventful(row):  # a claim and nothing after it: a line, not empty charts
        return head + f'<dl class="facts">{listing}</dl>\n</section>\n'
    return (
        f'{head}<dl class="facts">{listing}</dl>\n'
        f'<figure class="timeline"><figcaption>Open steps over time, each engagement, '
        f"each step closed, and the waits</figcaption>{timeline(row)}{_legend(row)}</figure>\n"
        f"{_closes(row)}"
        f'<figure class="tokens"><figcaption>Tokens per engagement (red: closed nothing)'
        f"</figcaption>{bars(tokens['engagements'])}</figure>\n</section>\n"
    )


def _eventful(row: dict[str, Any]) -> bool:
    line = row.get("timeline") or {}
    return bool(row["engagements"] or line.get("closes") or len(line.get("open") or []) > 1)


class Axis:
    """A time axis from `first` to `last` across the timeline's plot, with round ticks."""

    def __init__(self, first: float, last: float) -> None:
        self.first, self.last = first, max(last, first + 60)
        span = self.last - self.first
        self.every = next((t for t in TICKS if span / t <= 6), TICKS[-1])

    def x(self, at: float) -> float:
        share = (at - self.first) / (self.last - self.first)
        return LEFT + max(0.0, min(1.0, share)) * (LINE_W - LEFT - RIGHT)

    def draw(self, y: float) -> str:
        start = -(-self.first // self.every) * self.every
        ticks: list[float] = []
        at = start
        while at <= self.last and len(ticks) < 12:
            ticks.append(at)
            at += self.every
        labels = "".join(
            f'<line class="axis" x1="{self.x(t):.1f}" y1="{y}" x2="{self.x(t):.1f}" '
            f'y2="{y + 4}"/><text class="tick" x="{self.x(t):.1f}" y="{y + 15}" '
            f'text-anchor="middle">{self._label(t)}</text>'
            for t in ticks
        )
        return (
            f'<line class="axis" x1="{LEFT}" y1="{y}" x2="{LINE_W - RIGHT}" y2="{y}"/>{labels}'
            f'<text x="{LINE_W - RIGHT}" y="{y + 28}" text-anchor="end">time (UTC)</text>'
        )

    def _label(self, at: float) -> str:
        text = iso(at)
        if self.every >= 86400:
            return text[5:10]
        if self.last - self.first >= 86400:
            return f"{text[5:10]} {text[11:16]}"
        return text[11:19] if self.every < 60 else text[11:16]


def timeline(row: dict[str, Any]) -> str:
    """The run on a time axis: the open steps as a step line ending where the run ended, each
    engagement a mark (red when it closed nothing), each close a green diamond, the waits (a
    usage limit, a window, a person's stop) shaded, restarts of the host dashed."""
    line = row.get("timeline") or {}
    first = parse_iso(row["started"]) or 0.0
    ends = [parse_iso(row.get("last")), parse_iso(row.get("ended"))]
    ends += [parse_iso(w["until"]) for w in line.get("waits", [])]
    last = max([first, *(t for t in ends if t is not None)])
    axis = Axis(first, last)
    points = [(t, p["open"]) for p in line.get("open", []) if (t := parse_iso(p["at"])) is not None]
    top: int = max([1, *(int(n) for _, n in points)])
    drawn = _waits(line.get("waits", []), axis, last)
    drawn += _open_steps(points, top, axis, last)
    drawn += _restarts(line.get("restarts", []), axis)
    drawn += _engagements(line.get("engagements", []), row["tokens"]["engagements"], axis)
    drawn += _close_marks(line.get("closes", []), dict(points), top, axis)
    drawn.append(axis.draw(TOP + PLOT + 26))
    return _svg("".join(drawn), LINE_W, TOP + PLOT + 26 + 34, "timeline")


def _height(n: int, top: int) -> float:
    """The y of `n` open steps on a plot whose top is `top` of them."""
    return TOP + (1 - n / top) * PLOT


def _waits(waits: list[dict[str, Any]], axis: Axis, last: float) -> list[str]:
    """Each wait a shaded span with its label; one not yet over runs to the run's end."""
    drawn = []
    for wait in waits:
        start, until = parse_iso(wait["from"]), parse_iso(wait["until"])
        if start is None:
            continue
        x0, x1 = axis.x(start), axis.x(until if until is not None else last)
        said = WAIT_WORDS.get(wait["kind"], wait["kind"])
        by = f" ({_text(wait['by'])})" if wait.get("by") else ""
        drawn.append(
            f'<rect class="wait {_text(wait["kind"])}" x="{x0:.1f}" y="{TOP}" '
            f'width="{max(2.0, x1 - x0):.1f}" height="{PLOT + 26}">'
            f"<title>{_text(said)}{by} from {_at(start)}"
            f"{' until ' + _at(until) if until is not None else ''}</title></rect>"
        )
        right = x0 > LINE_W - RIGHT - 90  # a label near the right edge ends at the span
        drawn.append(
            f'<text class="wait-label" x="{x0 - 3 if right else x0 + 3:.1f}" y="{TOP + 10}" '
            f'text-anchor="{"end" if right else "start"}">'
            f"{WAIT_LABELS.get(wait['kind'], _text(wait['kind']))}</text>"
        )
    return drawn


def _open_steps(points: list[tuple[float, int]], top: int, axis: Axis, last: float) -> list[str]:
    """The open steps' scale, its grid, and their count over time as a step line."""
    drawn = [
        f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LINE_W - RIGHT}" y2="{y:.1f}"/>'
        f'<text class="open-label" x="{LEFT - 6}" y="{y + 3:.1f}" text-anchor="end">{n}</text>'
        for n in sorted({top, 0, top // 2})
        for y in (_height(n, top),)
    ]
    drawn.append(
        f'<text x="{LEFT - 6}" y="{TOP - 4}" text-anchor="end">open</text>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + PLOT}"/>'
    )
    if points:
        path = [f"M{axis.x(points[0][0]):.1f},{_height(points[0][1], top):.1f}"]
        for t, n in points[1:]:
            path.append(f"H{axis.x(t):.1f}V{_height(n, top):.1f}")
        path.append(f"H{axis.x(last):.1f}")
        drawn.append(f'<path class="line" d="{"".join(path)}"/>')
    return drawn


def _restarts(restarts: list[dict[str, Any]], axis: Axis) -> list[str]:
    """Each restart of the host a dashed line across the plot."""
    drawn = []
    for restart in restarts:
        at = parse_iso(restart["at"])
        if at is not None:
            drawn.append(
                f'<line class="restart" x1="{axis.x(at):.1f}" y1="{TOP}" x2="{axis.x(at):.1f}" '
                f'y2="{TOP + PLOT + 26}"><title>host restarted at {_at(at)}: '
                f"{_text(restart['reason'])}</title></line>"
            )
    return drawn


def _engagements(marks: list[dict[str, Any]], costs: list[dict[str, Any]], axis: Axis) -> list[str]:
    """Each engagement a mark in the lane under the plot, red when it closed nothing."""
    closed = {e["engagement"]: e["closed"] for e in costs}
    lane = TOP + PLOT + 14
    drawn = [f'<text x="{LEFT - 6}" y="{lane + 3}" text-anchor="end">engaged</text>']
    for mark in marks:
        at = parse_iso(mark["at"])
        if at is None:
            continue
        waste = closed.get(mark["engagement"]) == 0 and mark["tokens"] is not None
        step = f", step {_text(mark['step'])}" if mark["step"] else ""
        drawn.append(
            f'<circle class="engage{" waste" if waste else ""}" cx="{axis.x(at):.1f}" '
            f'cy="{lane}" r="4"><title>engagement {mark["engagement"]}{step} at {_at(at)}: '
            f"{_number(mark['tokens'])} tokens</title></circle>"
        )
    return drawn


def _close_marks(
    closes: list[dict[str, Any]], after: dict[float, int], top: int, axis: Axis
) -> list[str]:
    """Each step closed a diamond on the step line, at the open steps it left."""
    drawn = []
    for shut in closes:
        at = parse_iso(shut["at"])
        if at is None:
            continue
        cx, cy = axis.x(at), _height(after.get(at, 0), top)
        drawn.append(
            f'<path class="close" d="M{cx:.1f},{cy - 5:.1f}l5,5l-5,5l-5,-5z">'
            f"<title>step {_text(shut['step'])} closed at {_at(at)}</title></path>"
        )
    return drawn


def _legend(row: dict[str, Any]) -> str:
    line = row.get("timeline") or {}
    kinds = {w["kind"] for w in line.get("waits", [])}
    parts = ['<i class="engage"></i>engagement', '<i class="waste"></i>closed nothing',
             '<i class="close"></i>step closed']  # fmt: skip
    if kinds & {events.PAUSED_USAGE_LIMIT, events.PAUSED_WINDOW}:
        parts.append('<i class="wait"></i>waiting (usage limit, window)')
    if events.PAUSED_QUOTA in kinds:
        parts.append('<i class="wait"></i>waiting for a usage window (the reserve)')
    if events.STOPPED in kinds:
        parts.append('<i class="stopped"></i>stopped by a person')
    if line.get("restarts"):
        parts.append('<i class="restart"></i>host restarted')
    return f'<p class="legend">{"".join(parts)}</p>'


def _closes(row: dict[str, Any]) -> str:
    """Per step closed: who closed it, when, in which engagement, and at what cost."""
    closes = (row.get("timeline") or {}).get("closes") or []
    if not closes:
        return ""
    body = "".join(
        f'<tr><td class="step">{_text(c["step"])}</td><td>{_at(parse_iso(c["at"]))}</td>'
        f"<td>run {_text(row['run'][:8])}</td>"
        f"<td>{'the person’s turn' if not c['engagement'] else c['engagement']}</td>"
        f"<td>{_number(c['tokens'])}</td></tr>"
        for c in closes
    )
    return (
        '<table class="closes"><thead><tr><th>step</th><th>closed</th><th>by</th>'
        f"<th>engagement</th><th>its tokens</th></tr></thead><tbody>{body}</tbody></table>\n"
    )


def bars(engagements: list[dict[str, Any]]) -> str:
    """Each engagement's tokens as a bar; red when it closed nothing, grey when unknown."""
    if not engagements:
        return _svg('<text x="8" y="20">no engagement with its cost recorded</text>', WIDTH, 30)
    top = max((e["tokens"] or 0 for e in engagements), default=0) or 1
    width = (WIDTH - 2 * PAD) / len(engagements)
    drawn = []
    for i, e in enumerate(engagements):
        spent = e["tokens"]
        kind = "unknown" if spent is None else "waste" if not e["closed"] else "closed"
        height = 2.0 if spent is None else max(1.0, spent / top * (HEIGHT - 2 * PAD))
        step = f" ({_text(e['step'])})" if e["step"] else ""
        drawn.append(
            f'<rect class="bar {kind}" x="{PAD + i * width + 1:.1f}" '
            f'y="{HEIGHT - PAD - height:.1f}" width="{max(1.0, width - 2):.1f}" '
            f'height="{height:.1f}" data-tokens="{"" if spent is None else spent}">'
            f"<title>engagement {e['engagement']}{step}: {_number(spent)} tokens, "
            f"{plural(e['closed'], 'step')} closed</title></rect>"
        )
        if len(engagements) <= 24:
            drawn.append(
                f'<text x="{PAD + (i + 0.5) * width:.1f}" y="{HEIGHT - PAD + 12}" '
                f'text-anchor="middle">{e["engagement"]}</text>'
            )
    scale = (
        f'<text x="2" y="{PAD - 8}">{_number(top)}</text>'
        f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" '
        f'y2="{HEIGHT - PAD}"/><text x="{WIDTH - PAD}" y="{HEIGHT - 2}" '
        'text-anchor="end">engagement</text>'
    )
    return _svg(scale + "".join(drawn), WIDTH, HEIGHT, "tokens")


def _svg(body: str, width: int, height: float, kind: str = "") -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{kind}" '
        f'viewBox="0 0 {width} {height:.0f}" role="img">{body}</svg>'
    )


def _when(at: str) -> str:
    """An ISO time the report wrote, to the second, as the page shows times."""
    return _text(at[:19].replace("T", " "))


def _at(at: float | None) -> str:
    return "-" if at is None else iso(at)[:19].replace("T", " ")


def _anchor(n: int, row: dict[str, Any]) -> str:
    return f"run-{n}"


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _clean(value: str) -> str:
    return value.translate(_CONTROL)


def _text(value: str) -> str:
    return escape(_clean(value))
