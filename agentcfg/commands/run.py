"""`agentcfg run`: an unattended run of a host on a roadmap, to its ending."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import replace
from pathlib import Path

import click

from agentcfg.agents import agent_session, require_person
from agentcfg.commands import COUNT, DURATION, clock, emit_json, json_option, say, workspace
from agentcfg.contract import verify
from agentcfg.core.evidence import baseline_line, baseline_total
from agentcfg.core.texts import store_reach
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.leases import TTL, check_ttl
from agentcfg.paths import user_state
from agentcfg.run import driver
from agentcfg.run import model as unattended
from agentcfg.workspace import Workspace


def _passed_on(
    until: str | None, window: str | None, max_restarts: int | None, max_wait: float | None
) -> list[str]:
    """The run options each fleet member gets as they were given."""
    given = {"--until": until, "--window": window, "--max-restarts": max_restarts}
    line = [
        part for name, value in given.items() if value is not None for part in (name, str(value))
    ]
    return line + ([] if max_wait is None else ["--max-wait", f"{int(max_wait)}s"])


_HOSTS = " or ".join(", ".join(driver.runnable_hosts()).rsplit(", ", 1))


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("slug")
@click.option("--host", "host", required=True, metavar="HOST", help=f"The host to run: {_HOSTS}.")
@click.option("--until", "until", help="Stop by then: HH:MM, an ISO-8601 time, or a duration (8h).")
@click.option("--window", "window", help="Work only in these hours (local time), e.g. 22:00-06:00.")
@click.option(
    "--max-restarts",
    type=COUNT,
    help=f"Host starts after the first, at most  [default: {unattended.MAX_RESTARTS}].",
)
@click.option(
    "--max-wait",
    type=DURATION,
    help="The longest single wait (usage limit, backoff) before looking again  [default: 5h].",
)
@click.option(
    "--fresh-per-step",
    is_flag=True,
    help="Each step in a new host session, seeded with a relay note (bounded context).",
)
@click.option("--force", is_flag=True, help="Take the roadmap over from another live session.")
@click.option(
    "--rollback-on-halt",
    is_flag=True,
    help="A halt mid-step (stall, restarts) rolls the workspace back to the step's checkpoint.",
)
@click.option(
    "--no-baseline",
    is_flag=True,
    help="Do not run the open steps' verify lines before the host starts (evidence: unknown).",
)
@click.option(
    "--agents",
    type=click.IntRange(min=1, max=64),
    help="Run a fleet of this many agents, each in a git worktree of its own.",
)
@click.option(
    "--into", metavar="BRANCH", help="With --agents: the fleet's branch (default: this one)."
)
@click.option(
    "--coordinate",
    metavar="REMOTE",
    help="With --agents: share leases and the branch on this remote.",
)
@click.option(
    "--lease-ttl",
    type=DURATION,
    help="With --agents: a step lease's life unless renewed (15m).",
)
@click.option("--member", type=click.IntRange(min=1), hidden=True)
@click.option("--fleet-root", type=click.Path(file_okay=False, path_type=Path), hidden=True)
@json_option
@click.argument("extra", nargs=-1, type=click.UNPROCESSED)
def run(
    slug: str,
    host: str,
    until: str | None,
    window: str | None,
    max_restarts: int | None,
    max_wait: float | None,
    fresh_per_step: bool,
    force: bool,
    rollback_on_halt: bool,
    no_baseline: bool,
    agents: int | None,
    into: str | None,
    coordinate: str | None,
    lease_ttl: float | None,
    member: int | None,
    fleet_root: Path | None,
    as_json: bool,
    extra: tuple[str, ...],
) -> None:
    """Run a host headless on roadmaps/<SLUG>.md until the run ends; arguments after `--`
    go to the host. Exit 0 when complete; see the README for the other exit codes."""
    moment = clock().now()
    offset = float(time.localtime(moment).tm_gmtoff)
    parsed_window = None
    if window is not None:
        parsed_window = unattended.parse_window(window)
        if parsed_window is None:
            raise AgentcfgError(f"--window {window!r} is not HH:MM-HH:MM, e.g. 22:00-06:00")
    parsed_until = None
    if until is not None:
        parsed_until = unattended.parse_until(until, moment, offset)
        if parsed_until is None:
            raise AgentcfgError(
                f"--until {until!r} is not HH:MM, an ISO-8601 time or a duration like 8h"
            )
    policy = unattended.Policy(
        max_restarts=unattended.MAX_RESTARTS if max_restarts is None else max_restarts,
        until=parsed_until,
        window=parsed_window,
        utc_offset=offset,
        max_wait=unattended.LIMIT_WAIT if max_wait is None else max_wait,
    )
    if (member is None) != (fleet_root is None):  # alone, --member would act as --force
        raise click.UsageError("--member and --fleet-root are a fleet's own: they go together")
    ws = workspace()
    require_person("agentcfg run", agent_session(os.environ, ws=ws))  # a fresh run is theirs
    if agents is None and member is None and (into or coordinate or lease_ttl):
        raise click.UsageError("--into, --coordinate and --lease-ttl go with --agents")
    if lease_ttl is not None:
        check_ttl(lease_ttl)
    request = driver.Request(
        slug, host, policy, extra, force or member is not None, fresh_per_step,
        rollback_on_halt=rollback_on_halt,
    )  # fmt: skip
    ready = driver.prepare(ws, request, os.environ, Path.home(), hook=agents is None)
    signal.signal(signal.SIGTERM, driver.on_sigterm)

    def baseline() -> None:  # each open step's check once before the work, unless told not to
        if no_baseline:
            return
        taken, untrusted = verify.take_baseline(ws, slug, os.environ, echo=lambda step, result: say(
            baseline_line(step.name, result.exit_code, result.duration), err=as_json
        ))  # fmt: skip
        if taken or untrusted:
            ran = [(r.exit_code, r.duration) for r in taken]
            say(baseline_total(ws.canonical(slug), ran, untrusted), err=as_json)

    if agents is not None:  # each member warns as it starts: a fleet that cannot start is one line
        options = _passed_on(until, window, max_restarts, max_wait)
        options += ["--fresh-per-step"] if fresh_per_step else []
        code = fleet_run.run_fleet(
            ws, slug, host, agents, into, coordinate, lease_ttl or TTL,
            [*options, "--", *extra], baseline=baseline,
            member_check=lambda tree: driver.prepare(tree, request, os.environ, Path.home()),
        )  # fmt: skip
        raise SystemExit(code)
    if member is not None and fleet_root is not None:  # a fleet's member: the fleet's leases
        shown = lambda line: say(f"[{member}] {line}", err=as_json)  # noqa: E731
        env = fleet.member_env(os.environ, Workspace(Path(fleet_root)).canonical(slug))
        say(f"[{member}] {_store_line(ws.root, ready, extra)}", err=as_json)
        for line in ready.warnings:
            say(f"[{member}] agentcfg run: warning: {line}", err=as_json)
        raise SystemExit(
            fleet_run.run_member(
                ws, Path(fleet_root), slug, host, member, into, coordinate, lease_ttl or TTL,
                lambda tree, step: driver.drive(
                    tree, replace(request, step=step), ready, env, clock(), shown
                ),
                say=shown,
            )
        )  # fmt: skip
    say(_store_line(ws.root, ready, extra), err=as_json)
    for line in ready.warnings:
        say(f"agentcfg run: warning: {line}", err=as_json)
    baseline()
    result = driver.drive(
        ws, request, ready, os.environ, clock(), lambda line: say(line, err=as_json)
    )
    if as_json:
        emit_json(result.to_json())
    raise SystemExit(result.exit_code)


def _store_line(root: Path, ready: driver.Prepared, extra: tuple[str, ...]) -> str:
    """The run's first line: whether the host's sandbox keeps the agent from forging what
    decides how the run ends (the key in the person's own store)."""
    store = Path(user_state(os.environ))
    reach = ready.host.store_reach(root, Path.home(), os.environ, store, extra)
    return f"agentcfg run: store {store_reach(ready.host.TITLE, reach.sealed, reach.why)}"
