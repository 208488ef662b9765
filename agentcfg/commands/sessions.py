"""`agentcfg sessions`: claim, release, list and show."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from agentcfg import claims, controls, loading
from agentcfg.agents import agent_session
from agentcfg.commands import COUNT, DURATION, emit_json, json_option, now, say, workspace
from agentcfg.core.times import format_duration, iso
from agentcfg.doctor import cap_findings
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.leases import TTL
from agentcfg.fleet.membership import read_membership
from agentcfg.hosts.registry import host_of, session_env
from agentcfg.workspace import Workspace

session_option = click.option(
    "--session", "session", help="Session id (default: from the environment)."
)


@click.group()
def sessions() -> None:
    """Bind sessions to roadmaps."""


@sessions.command("claim")
@click.argument("slug")
@click.option("--force", is_flag=True, help="Take the roadmap over from another live session.")
@session_option
@click.option("--max-iterations", type=COUNT, help="This run's iteration cap.")
@click.option("--wall-clock", type=DURATION, help="This run's time cap, e.g. 2h.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="This run's token budget.")
@click.option(
    "--step",
    metavar="auto|ID",
    help="Work as one of a fleet: lease this step, or with `auto` the first one open to the fleet.",
)
@click.option(
    "--coordinate", metavar="REMOTE", help="With --step: share leases on this git remote."
)
@click.option(
    "--lease-ttl",
    type=DURATION,
    help="With --step: how long the lease lasts unless a turn end renews it (default 15m).",
)
def claim_command(
    slug: str,
    force: bool,
    session: str | None,
    max_iterations: int | None,
    wall_clock: float | None,
    max_tokens: int | None,
    step: str | None,
    coordinate: str | None,
    lease_ttl: float | None,
) -> None:
    """Bind this session to roadmaps/<SLUG>.md and start a fresh run; from inside the session,
    a claim on the roadmap it holds keeps its run as it is (only a person starts it afresh).

    Where no session id is visible (Gemini CLI's shell tool), the claim waits for the session
    whose next turn end shows the token it prints. With --step the session works as a member of
    a fleet on the roadmap: its continuation names the one step it leases.
    """
    ws = workspace()
    if step is None and (coordinate is not None or lease_ttl is not None):
        raise click.UsageError("--coordinate and --lease-ttl go with --step")
    inside = agent_session(os.environ, ws=ws) is not None
    if step is None:
        _claim(ws, slug, force, session, (max_iterations, wall_clock, max_tokens), inside)
        return
    held = read_membership(ws, ws.canonical(slug))
    if inside and held is not None:  # a member's agent works the one step it leases
        fleet.require_lease(ws, held.slug, fleet.step_of(ws, held, step))
    host = host_of(os.environ)
    lease = fleet.claim_step(
        ws, slug, step,
        lambda: _claim(ws, slug, force, session, (max_iterations, wall_clock, max_tokens), inside),
        session_id=claims.find_session(session, os.environ, session_env()), force=force,
        inside=inside, host=host.NAME if host else "unknown", coordinate=coordinate, now=now(),
        ttl=lease_ttl or TTL,
    )  # fmt: skip
    say(
        f"leased step {lease.step} of `{lease.slug}` (fence {lease.fence}) until "
        f"{iso(lease.expires)}: close this step only; each turn end renews the lease"
    )


def _claim(
    ws: Workspace,
    slug: str,
    force: bool,
    session: str | None,
    asked: tuple[int | None, float | None, int | None],
    inside: bool,
) -> None:
    """The claim, told: `asked` is the budget given (iterations, wall clock, tokens)."""
    max_iterations, wall_clock, cut = claims.clamp_budget(asked[0], asked[1])
    max_tokens = asked[2]
    for line in cut:
        click.echo(f"note: {line}")
    budget = {"max_iterations": max_iterations, "wall_clock": wall_clock, "max_tokens": max_tokens}
    terms = {"now": now(), "force": force, "inside": inside, **budget}
    session_id = claims.find_session(session, os.environ, session_env())
    if session_id is None:
        pending = controls.claim_pending(ws, slug, **terms)
        slug = pending.slug
        say(f"claimed roadmap `{slug}` for the session that shows {pending.token}")
        say(
            "no session id is visible here: the next turn end of the session this output "
            "reaches binds the claim"
        )
    else:
        claimed = _claim_session(ws, session_id, slug, terms, any(budget.values()))
        if claimed is None:
            return
        slug = claimed
    _say_budget(max_iterations, wall_clock, max_tokens)
    _say_notes(ws, slug, session)


def _claim_session(
    ws: Workspace, session_id: str, slug: str, terms: dict[str, Any], budget: bool
) -> str | None:
    """The roadmap this session now holds, told with whom it took it over from; None when
    the session held it already, whose run goes on."""
    result = controls.claim(ws, session_id, slug, **terms)
    slug = result.claim.slug
    if result.kept:
        run = claims.shown_run(claims.read_run(ws, result.claim))
        say(
            f"session {session_id} holds roadmap `{slug}` already: its run goes on as it "
            f"was ({run}{'; its budget as first claimed' if budget else ''}); only a "
            "person starts it afresh, from their own terminal"
        )
        return None
    for peer in result.displaced:
        say(f"took roadmap `{slug}` over from session {peer.session_id}")
    if result.replaced is not None:
        say(f"replaced this session's claim on `{result.replaced.slug}`; the run starts afresh")
    say(f"claimed roadmap `{slug}` for session {session_id}")
    return slug


def _say_budget(
    max_iterations: int | None, wall_clock: float | None, max_tokens: int | None
) -> None:
    caps = [f"max {max_iterations} iterations"] if max_iterations else []
    if wall_clock:
        caps.append(f"wall clock {format_duration(wall_clock)}")
    if max_tokens:
        caps.append(f"{max_tokens:,} tokens")
    if caps:
        say("budget: " + ", ".join(caps))


def _say_notes(ws: Workspace, slug: str, session: str | None) -> None:
    """What keeps the stop hook from carrying the claimed roadmap on: its mode, and what the
    host here allows its agent (asked only when no --session names another)."""
    mode = loading.status(slug, loading.load(ws, slug))["mode"]
    if mode != "autonomous":
        say(
            f"note: roadmap `{slug}` is in mode `{mode}`, not `autonomous`: "
            "the stop hook will not continue it."
        )
    host = host_of(os.environ) if session is None else None
    for finding in cap_findings(ws, host, Path.home(), os.environ, [slug]) if host else []:
        say(f"note: {finding.message}; {finding.fix}.")


@sessions.command("release")
@session_option
def release_command(session: str | None) -> None:
    """Remove this session's claim and its run (from inside an agent's session, the run's
    state stays: claiming again there cannot start it afresh)."""
    ws = workspace()
    session_id = claims.resolve_session(session, os.environ, session_env())
    inside = any(os.environ.get(name) == session_id for name in session_env())
    inside = inside or agent_session(os.environ, ws=ws) is not None
    released = claims.release(ws, session_id, now=now(), inside=inside)
    if released is None:
        say(f"session {session_id} holds no claim")
    else:
        by = " from inside an agent's session; its run stays as it was" if inside else ""
        say(f"released roadmap `{released.slug}` for session {session_id}{by}")


@sessions.command("list")
@json_option
def list_command(as_json: bool) -> None:
    """Every claim with its age, roadmap progress and run state."""
    ws = workspace()
    moment = now()
    found = claims.all_claims(ws)
    rows = [claims.describe(ws, c, moment) for c in found]
    _told(ws, list(zip(found, rows, strict=True)), moment)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        say("no claims")
        return
    for row in rows:
        say(_line(row))


def _told(ws: Workspace, rows: list[tuple[claims.Claim, dict[str, Any]]], moment: float) -> None:
    """Each claim's run as the ledger tells it (`report`'s own fold): `state` on its row."""
    if not rows:
        return
    from agentcfg import state
    from agentcfg.core import report

    folder = report.Folder(keep=1)
    for line in state.ledger_lines(ws.state):
        folder.take(line)
    for claim, row in rows:
        run = folder.current(claim.key, claim.slug)
        if run is not None:
            outcome, said = report.settle(run, moment)
            row["state"] = {"outcome": outcome, "said": said}


def _line(row: dict[str, Any]) -> str:
    age = format_duration(row["age_seconds"])
    if row["stale"]:
        return f"{row['session']}  `{row['slug']}`  {age} ago  STALE: the roadmap is gone"
    progress = row["progress"]
    done = f"{progress['done']} done, {progress['open']} open" if progress else "unreadable"
    if progress and progress["blocked"]:
        done += f", {progress['blocked']} blocked"
    run = row["run"]
    told = row.get("state")
    if run is not None and told is not None and told["outcome"] != "running":
        state = f"{told['said']}; {run['iterations']} iterations"  # as `report` tells it
    elif run is None:
        state = "no run"
    elif run["halted"]:
        state = f"halted: {run['halted']} after {run['iterations']} iterations"
    elif run["ended"] or run["paused"]:
        state = f"{run['ended'] or 'paused'} after {run['iterations']} iterations"
    else:
        state = f"running, {run['iterations']} iterations"
    mode = f" ({row['mode']})" if row["mode"] else ""  # none read from an unreadable roadmap
    return f"{row['session']}  `{row['slug']}`{mode}  {age} ago  {done}  {state}"


@sessions.command("show")
@session_option
@json_option
def show_command(session: str | None, as_json: bool) -> None:
    """This session's claim and run."""
    ws = workspace()
    session_id = claims.resolve_session(session, os.environ, session_env())
    found = claims.read_claim(ws, claims.session_key(session_id))
    moment = now()
    row = claims.describe(ws, found, moment) if found else None
    if found is not None and row is not None:
        _told(ws, [(found, row)], moment)
    if as_json:
        emit_json(row)
        return
    if row is None:
        say(f"session {session_id} holds no claim")
        return
    say(f"session {row['session']}")
    say(_line(row))
    if row.get("next"):
        step = row["next"]
        say(f"next: **{step['id']}** {step['text']}")
        if step["verify"]:
            say(f"  verify: {step['verify']}")
