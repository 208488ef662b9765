"""`agentcfg stop` and `agentcfg resume`: a person halts runs from outside the model."""

from __future__ import annotations

import os

import click

from agentcfg import claims, controls
from agentcfg.agents import agent_session, require_person
from agentcfg.commands import emit_json, json_option, now, say, workspace
from agentcfg.core.times import iso
from agentcfg.hosts.registry import session_env


@click.command("stop")
@click.argument("slug", required=False)
@click.option("--all", "every", is_flag=True, help="Stop every roadmap a live claim holds.")
@json_option
def stop(slug: str | None, every: bool, as_json: bool) -> None:
    """Stop the runs on roadmaps/<SLUG>.md (or all) until `agentcfg resume <SLUG>`."""
    if (slug is None) == (not every):
        raise click.UsageError("name one roadmap, or pass --all")
    results = controls.stop(
        workspace(), None if every else [slug or ""], controls.who(os.environ, session_env()), now()
    )
    if as_json:
        emit_json(
            [{**r.stop.to_json(), "already": r.already, "sessions": r.sessions} for r in results]
        )
        return
    if not results:
        say("no live runs to stop")
    for result in results:
        found = result.stop
        if result.already:
            say(
                f"roadmap `{found.slug}` was already stopped by {found.by} at {iso(found.stopped_at)}"
            )
            continue
        say(f"stopped roadmap `{found.slug}` (by {found.by})")
        if result.sessions:
            names = ", ".join(result.sessions)
            say(f"  the next turn end of session {names} is allowed and its agent told")
        say(f"  no session can claim it until `agentcfg resume {found.slug}`")


@click.command("resume")
@click.argument("slug")
@json_option
def resume(slug: str, as_json: bool) -> None:
    """Lift the stop on roadmaps/<SLUG>.md: its runs carry on at their next fire."""
    ws = workspace()
    by = controls.who(os.environ, session_env())
    inside = claims.find_session(None, os.environ, session_env())
    why = agent_session(os.environ, ws=ws)
    if why is not None and not (inside and controls.stopped_on(ws, inside)):
        require_person("agentcfg resume", why)  # a stopped session's own refusal says more
    result = controls.resume(ws, slug, by, now(), inside)
    if as_json:
        was = result.was.to_json() if result.was else None
        emit_json({"slug": result.slug, "resumed": was is not None, "by": by, "was": was})
    elif result.was is None:
        say(f"roadmap `{result.slug}` is not stopped")
    else:
        say(
            f"resumed roadmap `{result.slug}` (by {by}; stopped by {result.was.by} at "
            f"{iso(result.was.stopped_at)})"
        )
