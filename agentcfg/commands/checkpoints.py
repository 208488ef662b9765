"""`agentcfg checkpoints` and `agentcfg rollback`: the workspace as it was before each step's
work, and the way back to it."""

from __future__ import annotations

import os
import sys

import click

from agentcfg import checkpoints, claims, controls
from agentcfg.agents import agent_session, require_person
from agentcfg.commands import emit_json, json_option, now, say, workspace
from agentcfg.core import checkpoints as texts
from agentcfg.core.times import iso
from agentcfg.errors import CheckpointError
from agentcfg.workspace import Workspace


@click.command("checkpoints")
@click.argument("slug")
@json_option
def checkpoints_command(slug: str, as_json: bool) -> None:
    """List the checkpoints of roadmaps/<SLUG>.md: the step, when it was taken, and how many
    files changed since (untracked ones included)."""
    ws = workspace()
    slug = ws.canonical(slug)
    found = checkpoints.listed(ws, slug, os.environ)
    if as_json:
        emit_json([
            {"step": c.step, "n": c.n, "ref": c.ref, "commit": c.commit, "at": iso(c.at),
             "run": c.run, "changed": c.changed}
            for c in found
        ])  # fmt: skip
        return
    for line in texts.listing(slug, [(c.step, c.n, c.at, c.changed) for c in found]):
        say(line)


@click.command("rollback")
@click.argument("slug")
@click.argument("step")
@click.option("--yes", is_flag=True, help="Do not ask on a terminal: roll back.")
@json_option
def rollback(slug: str, step: str, yes: bool, as_json: bool) -> None:
    """Bring the branch and the working tree back to the checkpoint taken before STEP of
    roadmaps/<SLUG>.md, keeping what is there now under refs/agentcfg/attempts/ first; the
    steps closed since open again. Asks on a terminal unless --yes; refused inside any agent's
    session."""
    ws = workspace()
    require_person("agentcfg rollback", agent_session(os.environ, ws=ws))
    slug = ws.canonical(slug)
    step = _step_id(ws, slug, step)
    found = checkpoints.newest(ws, slug, step, os.environ)
    if not yes:
        if not sys.stdin.isatty():
            raise CheckpointError(
                f"`agentcfg rollback {slug} {step}` asks first: run it on a terminal, or pass --yes"
            )
        changed = next(
            (c.changed for c in checkpoints.listed(ws, slug, os.environ) if c.ref == found.ref),
            None,
        )
        holders = [c.session_id for c in claims.all_claims(ws) if c.slug == slug]
        if controls.read_stop(ws, slug) is not None:
            holders = []  # a person stopped its runs already
        for line in texts.plan(slug, step, found.ref, found.at, changed, holders):
            say(line, err=as_json)
        if not click.confirm("Roll back?", err=as_json):
            raise CheckpointError(f"nothing rolled back for `{slug}`")
    done = checkpoints.rollback(ws, slug, step, now(), os.environ, by="person")
    if as_json:
        emit_json({
            "slug": slug, "step": step, "checkpoint": done.checkpoint.ref,
            "commit": done.checkpoint.commit, "attempt": done.attempt,
            "reopened": list(done.reopened),
        })  # fmt: skip
        return
    for line in texts.rolled_back(slug, step, found.ref, done.attempt, done.reopened):
        say(line)


def _step_id(ws: Workspace, slug: str, query: str) -> str:
    """The step's canonical id, found by any name the roadmap accepts for it; the query as it
    is when the roadmap no longer has such a step (its checkpoint may still be there)."""
    from agentcfg import loading
    from agentcfg.contract import verify
    from agentcfg.errors import AgentcfgError

    try:
        return verify.find_step(loading.load(ws, slug), query).id
    except AgentcfgError:
        return query
