"""`agentcfg run`: an unattended run of a host on a roadmap, to its ending."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import click

from agentcfg.agents import agent_session, require_person
from agentcfg.commands import COUNT, DURATION, clock, emit_json, json_option, say, workspace
from agentcfg.config import Config, load_config, reserve_percent
from agentcfg.contract import verify
from agentcfg.core.evidence import baseline_line, baseline_total
from agentcfg.core.quota import QUOTA_MARGIN
from agentcfg.core.texts import store_reach
from agentcfg.errors import AgentcfgError
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.leases import TTL, check_ttl
from agentcfg.hosts import windows
from agentcfg.paths import user_state
from agentcfg.run import driver
from agentcfg.run import model as unattended
from agentcfg.workspace import Workspace


def _passed_on(given: Mapping[str, Any]) -> list[str]:
    """The run options each fleet member gets as they were given (`given`: the command's
    parameters by name)."""
    line = [
        part
        for name in ("until", "window", "max_restarts", "reserve")
        if given[name] is not None
        for part in ("--" + name.replace("_", "-"), str(given[name]))
    ]
    if given["max_wait"] is not None:
        line += ["--max-wait", f"{int(given['max_wait'])}s"]
    return line + (["--fresh-per-step"] if given["fresh_per_step"] else [])


_HOSTS = " or ".join(", ".join(driver.runnable_hosts()).rsplit(", ", 1))
_NO_WINDOWS = " and ".join(
    ", ".join(h for h in driver.runnable_hosts() if not windows.shows(h)).rsplit(", ", 1)
)


@click.command("run", context_settings={"ignore_unknown_options": False})
@click.argument("slug")
@click.option(
    "--host",
    "host",
    required=True,
    metavar="HOST",
    help=f"The host to run: {_HOSTS}. A list (claude,codex): while one is paused at its usage "
    "limit or the reserve, the next that is not carries the run on.",
)
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
    "--reserve",
    metavar="PCT",
    help="Keep PCT % of each usage window for yourself: at a turn end once a window is "
    "100-PCT % used, pause until its reset (run.reserve in agentcfg.yaml). Claude Code "
    f"(signed in with a subscription) and Codex show their windows; {_NO_WINDOWS} show none.",
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
    reserve: str | None,
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
    go to the host. Exit 0 when complete; see the README for the other exit codes.

    The ending names the agent's tool calls the host refused for want of approval, and how
    to allow them. Gemini CLI and Qwen Code without yolo, and OpenCode with bash denied, offer
    the model no shell at all: only a call to it anyway is told, as the tool, not a command."""
    moment = clock().now()
    offset = float(time.localtime(moment).tm_gmtoff)
    when = _when(until, window, moment, offset)
    hosts = _hosts(host, fleet=agents is not None or member is not None)
    parsed_reserve = None if reserve is None else _reserve(reserve)
    if (member is None) != (fleet_root is None):  # alone, --member would act as --force
        raise click.UsageError("--member and --fleet-root are a fleet's own: they go together")
    ws = workspace()
    config = load_config(ws, os.environ)
    args = dict(config.host_args)
    policy = _policy(config, when, offset, max_restarts, max_wait, parsed_reserve)
    host, others = hosts[0], tuple(hosts[1:])
    extra = (*args.get(host, ()), *extra)
    require_person("agentcfg run", agent_session(os.environ, ws=ws))  # a fresh run is theirs
    if agents is None and member is None and (into or coordinate or lease_ttl):
        raise click.UsageError("--into, --coordinate and --lease-ttl go with --agents")
    if lease_ttl is not None:
        check_ttl(lease_ttl)
    request = driver.Request(
        slug, host, policy, extra, force or member is not None, fresh_per_step,
        rollback_on_halt=rollback_on_halt, others=others,
        others_args=tuple(args.get(name, ()) for name in others),
    )  # fmt: skip
    ready = driver.prepare(ws, request, os.environ, Path.home(), hook=agents is None)
    signal.signal(signal.SIGTERM, driver.on_sigterm)
    baseline = (lambda: None) if no_baseline else partial(_baseline, ws, slug, as_json)
    lease = (into, coordinate, lease_ttl or TTL)
    if agents is not None:  # each member warns as it starts: a fleet that cannot start is one line
        passed = [*_passed_on(click.get_current_context().params), "--", *extra]
        raise SystemExit(_fleet(ws, request, agents, lease, passed, baseline))
    if member is not None and fleet_root is not None:  # a fleet's member: the fleet's leases
        raise SystemExit(_member(ws, request, ready, (member, fleet_root), lease, as_json))
    raise SystemExit(_alone(ws, request, ready, hosts, baseline, as_json))


_Lease = tuple["str | None", "str | None", float]  # a fleet's branch, remote and lease life


def _when(
    until: str | None, window: str | None, moment: float, offset: float
) -> tuple[float | None, unattended.Window | None]:
    """--until and --window read; AgentcfgError when one is not a time."""
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
    return parsed_until, parsed_window


def _hosts(host: str, fleet: bool) -> list[str]:
    """The hosts --host names, in its order; a list of them only outside a fleet."""
    hosts = [name.strip() for name in host.split(",")]
    if not all(hosts):
        raise AgentcfgError(f"--host {host!r} is not a host or a list of hosts like claude,codex")
    if len(hosts) > 1 and fleet:
        raise click.UsageError("--host with several hosts goes without --agents")
    return hosts


def _reserve(reserve: str) -> float:
    """--reserve read as a percent; AgentcfgError when it is not one."""
    parsed = reserve_percent(reserve)
    if parsed is None:
        raise AgentcfgError(f"--reserve {reserve!r} is not a percent from 0 to 100, e.g. 30")
    return parsed


def _policy(
    config: Config,
    when: tuple[float | None, unattended.Window | None],
    offset: float,
    max_restarts: int | None,
    max_wait: float | None,
    reserve: float | None,
) -> unattended.Policy:
    """The run's policy: the options given, agentcfg.yaml's run settings, else the defaults."""
    return unattended.Policy(
        max_restarts=unattended.MAX_RESTARTS if max_restarts is None else max_restarts,
        until=when[0],
        window=when[1],
        utc_offset=offset,
        max_wait=unattended.LIMIT_WAIT if max_wait is None else max_wait,
        reserve=config.reserve if reserve is None else reserve,
        quota_margin=QUOTA_MARGIN if config.reserve_margin is None else config.reserve_margin,
    )


def _baseline(ws: Workspace, slug: str, as_json: bool) -> None:
    """Each open step's check once before the work."""
    taken, untrusted = verify.take_baseline(ws, slug, os.environ, echo=lambda step, result: say(
        baseline_line(step.name, result.exit_code, result.duration), err=as_json
    ), clock=clock().now)  # fmt: skip
    if taken or untrusted:
        ran = [(r.exit_code, r.duration) for r in taken]
        say(baseline_total(ws.canonical(slug), ran, untrusted), err=as_json)


def _fleet(
    ws: Workspace,
    request: driver.Request,
    agents: int,
    lease: _Lease,
    passed: list[str],
    baseline: Callable[[], None],
) -> int:
    """`run --agents N`: the fleet's ending, once every member has ended."""
    return fleet_run.run_fleet(
        ws, request.slug, request.host, agents, *lease, passed, baseline=baseline,
        member_check=lambda tree: driver.prepare(tree, request, os.environ, Path.home()),
    )  # fmt: skip


def _member(
    ws: Workspace,
    request: driver.Request,
    ready: driver.Prepared,
    member: tuple[int, Path],
    lease: _Lease,
    as_json: bool,
) -> int:
    """A fleet's member (its number and the fleet's checkout): the host driven on each step
    the fleet's leases give it, every line it says marked as its own."""
    n, root = member

    def shown(line: str) -> None:
        say(f"[{n}] {line}", err=as_json)

    env = fleet.member_env(os.environ, Workspace(root).canonical(request.slug))
    shown(_store_line(ws.root, ready, request.extra))
    for line in ready.warnings:
        shown(f"agentcfg run: warning: {line}")
    return fleet_run.run_member(
        ws, root, request.slug, request.host, n, *lease,
        lambda tree, step: driver.drive(
            tree, replace(request, step=step), ready, env, clock(), shown
        ),
        say=shown,
    )  # fmt: skip


def _alone(
    ws: Workspace,
    request: driver.Request,
    ready: driver.Prepared,
    hosts: list[str],
    baseline: Callable[[], None],
    as_json: bool,
) -> int:
    """A run of its own: its first lines, the baseline, then the host driven to the run's
    ending."""
    say(_store_line(ws.root, ready, request.extra), err=as_json)
    for line in ready.warnings:
        say(f"agentcfg run: warning: {line}", err=as_json)
    if request.policy.reserve is not None:
        for name in hosts:
            if not windows.shows(name):
                say(f"agentcfg run: {reserve_unseen(name)}", err=as_json)
    baseline()
    result = driver.drive(
        ws, request, ready, os.environ, clock(), lambda line: say(line, err=as_json)
    )
    if as_json:
        emit_json(result.to_json())
    return result.exit_code


def _store_line(root: Path, ready: driver.Prepared, extra: tuple[str, ...]) -> str:
    """The run's first line: whether the host's sandbox keeps the agent from forging what
    decides how the run ends (the key in the person's own store)."""
    store = Path(user_state(os.environ))
    reach = ready.host.store_reach(root, Path.home(), os.environ, store, extra)
    return f"agentcfg run: store {store_reach(ready.host.TITLE, reach.sealed, reach.why)}"


def reserve_unseen(name: str) -> str:
    """The line for a listed host whose usage windows no run can see."""
    from agentcfg.hosts import registry

    title = registry.adapter(name).TITLE
    return f"{title} shows no usage windows: the reserve is not kept while it runs"
