"""The report as one self-contained XHTML page: a summary table, then per run its burndown and
its tokens per engagement, drawn as inline SVG. Pure: the report's JSON data in, text out.

The page needs no network and no script; it parses as XML, so tests read it back.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape, quoteattr

from agentcfg.core.texts import plural

WIDTH, HEIGHT, PAD = 480, 140, 24
# characters XML cannot hold: a hostile ledger's text is shown with a replacement mark
_CONTROL = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF], "\ufffd")
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
table { border-collapse: collapse; }
th, td { padding: 0.2em 0.7em; border-bottom: 1px solid #ddd; text-align: right; }
th:nth-child(-n+4), td:nth-child(-n+4) { text-align: left; }
tr.totals td { font-weight: bold; border-top: 2px solid #999; }
section { margin-top: 2.5em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dt { color: #666; }
dd { margin: 0; }
figure { display: inline-block; margin: 0 1.5em 1em 0; }
figcaption { color: #666; font-size: 12px; }
svg text { font-size: 10px; fill: #666; }
.line { fill: none; stroke: #2a6fdb; stroke-width: 2; }
.point { fill: #2a6fdb; }
.bar { fill: #2a6fdb; }
.bar.waste { fill: #d9534f; }
.bar.unknown { fill: #bbb; }
"""


def render(data: dict[str, Any]) -> str:
    """The page for `report --json`'s data: every figure on it is one of that data's."""
    rows = data["rows"]
    runs = "".join(_section(n, row) for n, row in enumerate(rows, 1))
    shown = f"; the newest {len(rows)} shown" if len(rows) < data["runs"] else ""
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml" lang="en">\n'
        '<head><meta charset="utf-8"/><title>agentcfg report</title>'
        f"<style>{STYLE}</style></head>\n<body>\n<h1>What the continuations did and cost</h1>\n"
        f"<p>{plural(data['runs'], 'run')} from {plural(data['matched'], 'ledger event')}"
        f"{shown}.</p>\n{_summary(data)}\n{_fleet(data.get('fleet'))}{runs}{_changed(data)}</body>\n</html>\n"
    )


def _fleet(fleet: dict[str, Any] | None) -> str:
    """The fleet's figures, a row per member, and who holds which step as the ledger ends."""
    if not fleet:
        return ""
    members = "".join(
        _tr("", [("member", _text(member)), ("leased", _number(done["leased"])),
                 ("integrated", _number(done["integrated"])),
                 ("reopened", _number(done["reopened"]))])
        for member, done in fleet["members"].items()
    )  # fmt: skip
    holding = ", ".join(
        f"{_text(held['slug'])} {_text(held['step'])}: member {_text(held['member'])}"
        for held in fleet["holding"]
    )
    return (
        f"<h2>Fleet</h2>\n<p>{_number(fleet['integrated'])} steps integrated, "
        f"{_number(fleet['reopened'])} reopened ({_number(fleet['conflicts'])} conflicts, "
        f"{_number(fleet['reverify_failed'])} failed re-verify), "
        f"{_number(fleet['takeovers'])} leases taken over after expiry.</p>\n"
        '<table class="summary"><thead><tr><th>member</th><th>leased</th><th>integrated</th>'
        f"<th>reopened</th></tr></thead><tbody>{members}</tbody></table>\n"
        + (f"<p>Holding now: {holding}.</p>\n" if holding else "")
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


def _tr(kind: str, cells: list[tuple[str, str]]) -> str:
    row = "".join(f"<td class={quoteattr(name)}>{value}</td>" if name else "<td/>"
                  for name, value in cells)  # fmt: skip
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
    closing = [e for e in tokens["engagements"] if e["closed"]]
    closed_by = (
        ", ".join(
            f"{e['closed']} in engagement {e['engagement']}"
            + (f" (named {_text(e['step'])})" if e["step"] else "")
            for e in closing
        )
        or "none recorded per engagement"
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
        ("closed-by", "steps closed by", closed_by),
    ]
    listing = "".join(
        f"<dt>{label}</dt><dd class={quoteattr(name)}>{value}</dd>" for name, label, value in facts
    )
    return (
        f'<section class="run" id="{_anchor(n, row)}" data-run={quoteattr(_clean(row["run"]))}>\n'
        f"<h2>{_text(row['slug'])} <small>run {_text(row['run'][:8])}, started "
        f"{_text(row['started'])}</small></h2>\n<dl>{listing}</dl>\n"
        f"<figure><figcaption>Open steps at each engagement</figcaption>"
        f"{burndown(row['burndown'])}</figure>\n"
        f"<figure><figcaption>Tokens per engagement (red: closed nothing)</figcaption>"
        f"{bars(tokens['engagements'])}</figure>\n</section>\n"
    )


def burndown(points: list[int]) -> str:
    """The open steps at each engagement as a line."""
    if not points:
        return _svg('<text x="8" y="20">no engagements</text>')
    top = max(points) or 1
    step = (WIDTH - 2 * PAD) / max(1, len(points) - 1)
    xy = [(PAD + i * step, PAD + (1 - v / top) * (HEIGHT - 2 * PAD)) for i, v in enumerate(points)]
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    dots = "".join(
        f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="3">'
        f"<title>engagement {i}: {v} open</title></circle>"
        for i, ((x, y), v) in enumerate(zip(xy, points, strict=True), 1)
    )
    scale = f'<text x="2" y="{PAD + 4}">{top}</text><text x="2" y="{HEIGHT - PAD + 4}">0</text>'
    return _svg(f'{scale}<polyline class="line" points="{line}"/>{dots}')


def bars(engagements: list[dict[str, Any]]) -> str:
    """Each engagement's tokens as a bar; red when it closed nothing, grey when unknown."""
    if not engagements:
        return _svg('<text x="8" y="20">no engagement with its cost recorded</text>')
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
    scale = f'<text x="2" y="{PAD - 8}">{_number(top)}</text>'
    return _svg(scale + "".join(drawn))


def _svg(body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{body}</svg>'
    )


def _anchor(n: int, row: dict[str, Any]) -> str:
    return f"run-{n}"


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _clean(value: str) -> str:
    return value.translate(_CONTROL)


def _text(value: str) -> str:
    return escape(_clean(value))
