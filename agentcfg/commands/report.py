"""`agentcfg report`: what the continuations did, in figures and a burndown per run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from agentcfg import state
from agentcfg.commands import DURATION, emit_json, json_option, now, say, workspace
from agentcfg.core import report as reports
from agentcfg.core.texts import plural
from agentcfg.core.times import format_duration
from agentcfg.core.visible import visible
from agentcfg.errors import AgentcfgError
from agentcfg.workspace import Workspace


@click.command("report")
@click.option("--since", type=DURATION, help="Only events this recent, e.g. 7d or 12h.")
@click.option("--slug", help="Only this roadmap.")
@click.option("--run", "run_key", help="Only this run (a prefix of its key).")
@click.option(
    "--limit", default=20, show_default=True, type=click.IntRange(1, 1000), help="Runs listed."
)
@click.option(
    "--html",
    "page",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the report as a self-contained web page to this file.",
)
@json_option
def report(
    since: float | None,
    slug: str | None,
    run_key: str | None,
    limit: int,
    page: Path | None,
    as_json: bool,
) -> None:
    """Runs, outcomes, engagements, burndowns and tokens from state/run-continuation.jsonl."""
    ws = workspace()
    moment = now()
    built = reports.build(
        state.ledger_lines(ws.state),
        since=None if since is None else moment - since,
        slug=slug,
        run=run_key,
        keep=limit,
        now=moment,
    )
    data = built.to_json()
    if page is not None:
        from agentcfg.core import html

        write_page(ws, page, html.render(data, ws.root.name))
    if as_json:
        emit_json(data)
        return
    say(render(data))


def write_page(ws: Workspace, page: Path, text: str) -> None:
    """Replace `page` whole (a link at `page` is replaced, its target left alone), never inside
    roadmaps/ or state/: a report does not write over what it reads."""
    where = page.absolute().parent.resolve()
    for folder in (ws.roadmaps, ws.state):
        if where.is_relative_to(folder.resolve()):
            raise AgentcfgError(f"{page} is inside roadmaps/ or state/: write the page elsewhere")
    if not where.is_dir():
        raise AgentcfgError(f"cannot write {page}: {where} is not a folder")
    data = text.encode("utf-8", "replace")
    try:
        if _special(where / page.name):
            _write_into(where / page.name, data)
        else:
            state.write_bytes(where / page.name, data, mode=0o644, private_dir=False)
    except OSError as exc:
        raise AgentcfgError(f"cannot write {page}: {exc.strerror}") from None


def _special(path: Path) -> bool:
    """Something other than a file or a link stands at `path`: a FIFO, a device."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode))


def _write_into(path: Path, data: bytes) -> None:
    """Write the page into a FIFO or a device as it stands, never replacing the node: a FIFO
    nobody reads is refused at once rather than waited on; a short or failed write is an
    OSError (a full device tells ENOSPC)."""
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def render(data: dict[str, Any]) -> str:
    if data["matched"] == 0:
        note = f" ({data['skipped']} unreadable lines skipped)" if data["skipped"] else ""
        return f"no continuation events to report yet{note}: claim a roadmap and let the hook run."
    out = [
        f"{plural(data['runs'], 'run')} from {plural(data['matched'], 'ledger event')}"
        + (f" ({data['skipped']} unreadable lines skipped)" if data["skipped"] else "")
    ]
    if data["rows"]:
        shown = len(data["rows"])
        out.append("")
        if shown < data["runs"]:
            out.append(f"the newest {shown} runs:")
        out.append(f"{'run':<9} {'roadmap':<16} {'started':<17} {'engaged':>7} {'closed':>6} "
                   f"{'proven':>7}  {'outcome':<21} {'wall':>6} {'tokens':>7} {'waste':>7}  "
                   "burndown")  # fmt: skip
        for row in data["rows"]:
            spent = row["tokens"]
            out.append(
                f"{row['run'][:8]:<9} {row['slug'][:16]:<16} {row['started'][:16].replace('T', ' '):<17} "
                f"{row['engagements']:>7} {row['closed']:>6} {_proven(row):>7}  "
                f"{row['outcome']:<21} "
                f"{format_duration(row['wall_seconds']):>6} {_short(spent['total']):>7} "
                f"{_short(spent['waste']):>7}  {reports.sparkline(row['burndown'])}"
            )
        told = [row for row in data["rows"] if row["outcome"] in reports.UNENDED]
        if told:
            out.append("")
            out += (f"{row['run'][:8]:<9} {row['said']}" for row in told)
        paused = [(row, reports.pause_lines(row)) for row in data["rows"]]
        if any(lines for _row, lines in paused):
            out.append("")
            out += (f"{row['run'][:8]:<9} {line}" for row, lines in paused for line in lines)
    per = data["steps_closed_per_engagement"]
    out += [
        "",
        "totals",
        f"  engagements            {data['engagements']:<6} steps closed {data['steps_closed']}"
        + (f" ({per:.2f} per engagement)" if per is not None else ""),
        f"  outcomes               {_counts(data['outcomes'])}",
        f"  deferred to the gate   {data['deferred_to_quality_gate']:<6} hand-backs: "
        f"question {data['handbacks']['question']}, background {data['handbacks']['background']}",
        f"  shadow would-engage    {data['shadow_would_engage']:<6} longest engagement streak: "
        f"{data['longest_engagement_streak']}",
        f"  cut short by the host  {data['cut_short_by_host']:<6} (a new prompt came while a "
        "continuation still held the turn)",
        f"  refusals               {_counts(data['refusals'])}",
        f"  paused by the person   {data['paused']:<6} released: {data['released']['total']}"
        f" ({data['released']['inside_session']} from inside the claimed session)",
        f"  verified {data['verified']}, marked done {data['marked_done']}, errors {data['errors']}",
        *_money(data["tokens"]),
        *_fleet(data["fleet"]),
        *_changed(data["contract_changed"]),
    ]
    return "\n".join(out)


def _fleet(fleet: dict[str, Any] | None) -> list[str]:
    if fleet is None:
        return []
    lines = [
        "",
        "fleet",
        f"  steps integrated       {fleet['integrated']:<6} reopened {fleet['reopened']} "
        f"(conflicts {fleet['conflicts']}, failed re-verify {fleet['reverify_failed']})",
        f"  leases taken           {fleet['leases']:<6} taken over after expiry {fleet['takeovers']}, "
        f"lost {fleet['lost']}",
    ]
    for held in fleet["holding"]:
        lines.append(
            f"  holding now            `{held['slug']}` step {held['step']}: member {held['member']}"
        )
    for one in fleet["fleets"]:
        lines += _members(one)
    return lines


def _members(fleet: dict[str, Any]) -> list[str]:
    """One fleet: when, how it ended, its wall time against its members' time, and each
    member's steps, tokens, waits, reopenings, takeovers and time."""
    agents = f", {plural(fleet['agents'], 'member')}" if fleet["agents"] is not None else ""
    ended = f"ended {fleet['ending'] or 'unknown'}" if fleet["ended"] else "no end recorded"
    lines = [
        "",
        f"fleet on `{visible(fleet['slug'])}` from {fleet['started'][:16].replace('T', ' ')}"
        f"{agents}, {visible(ended)}",
        f"  wall time {format_duration(fleet['wall_seconds'])}, members' time "
        + _members_time(fleet["member_seconds"], fleet["wall_seconds"]),
        f"  {'member':<8} {'steps':>5} {'leased':>6} {'tokens':>7} {'waits':>5} "
        f"{'reopened':>8} {'takeovers':>9} {'time':>6}",
    ]
    for name, member in fleet["members"].items():
        timed = format_duration(member["seconds"]) if member["runs"] else "-"
        lines.append(
            f"  {visible(name)[:8]:<8} {member['steps']:>5} {member['leased']:>6} "
            f"{_short(member['tokens']):>7} {member['waits']:>5} {member['reopened']:>8} "
            f"{member['takeovers']:>9} {timed:>6}"
        )
    return lines


def _members_time(seconds: float | None, wall: float) -> str:
    """The members' hosts' time summed, and how many times the wall time that is."""
    if seconds is None:
        return "unknown (no member run recorded)"
    times = f" ({seconds / wall:.1f}x the wall time)" if wall > 0 else ""
    return format_duration(seconds) + times


def _proven(row: dict[str, Any]) -> str:
    """Contracted steps closed by a receipt, of the run's contract: `2/3`; "-" when unknown."""
    return "-" if row["contract"] is None else f"{row['proven']}/{row['contract']}"


def _changed(halts: list[dict[str, Any]]) -> list[str]:
    """Every halt-contract-changed: what the agent changed, for the person to undo or accept."""
    if not halts:
        return []
    lines = ["", "contract changed (undo, or accept with `agentcfg roadmap trust <slug>`)"]
    for halt in halts:
        lines.append(f"  run {halt['run'][:8]} `{halt['slug']}` at {halt['at']}:")
        lines += (f"    {change}" for change in halt["changes"] or ["(no change named)"])
    return lines


def _money(spent: dict[str, Any]) -> list[str]:
    if spent["total"] is None:
        return ["  tokens                 unknown: no fire recorded what it cost"]
    per = spent["per_step_closed"]
    lines = [
        f"  tokens                 {spent['total']:,}"
        + (f" ({per:,} per step closed)" if per is not None else "")
        + f", {spent['waste']:,} in engagements that closed nothing"
        + (f"; {plural(spent['unknown'], 'fire')} with tokens unknown" if spent["unknown"] else "")
    ]
    top, where = spent["costliest"], spent["costliest_run"]
    if top is not None and where is not None:
        step = f" (step {top['step']})" if top["step"] else ""
        lines.append(
            f"  costliest engagement   {top['tokens']:,}: run {where['run'][:8]} "
            f"`{where['slug']}`, engagement {top['engagement']}{step}"
        )
    return lines


def _short(tokens: int | None) -> str:
    """A token count in at most 6 characters: 950, 12.3k, 4.1M; "-" when unknown."""
    if tokens is None:
        return "-"
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if tokens >= size:
            return f"{tokens / size:.1f}{unit}"
    return str(tokens)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counter.items()) or "none"
