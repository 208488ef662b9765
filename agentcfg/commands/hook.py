"""`agentcfg hook stop|session-start`: the commands a host registers (the console script
routes them directly)."""

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


@hook.command("session-start")
@click.option(
    "--host", type=click.Choice(sorted(HOSTS)), required=True, help="The host sending the payload."
)
def session_start_command(host: str) -> None:
    """Read one session-start payload on stdin; after a compaction, print the claimed step."""
    from agentcfg.stop.session_start import main

    raise SystemExit(main(["--host", host]))
