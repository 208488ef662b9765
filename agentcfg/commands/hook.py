"""`agentcfg hook stop`: the command a host registers (the console script routes it directly)."""

from __future__ import annotations

import click

from agentcfg.hosts.registry import HOSTS


@click.group()
def hook() -> None:
    """Hook entry points that agent hosts run."""


@hook.command("stop")
@click.option("--host", type=click.Choice(sorted(HOSTS)), help="The host sending the payload.")
def stop_command(host: str | None) -> None:
    """Read one stop payload on stdin and answer the host (block or allow)."""
    from agentcfg.stop.hook import main

    raise SystemExit(main(["--host", host] if host else []))
