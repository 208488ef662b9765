"""`agentcfg watch`: the claimed runs of this workspace, live."""

from __future__ import annotations

import os

import click

from agentcfg.commands import clock, workspace


@click.command("watch")
@click.option("--once", is_flag=True, help="Print one frame and exit.")
def watch(once: bool) -> None:
    """Show each claimed run live: progress, next step, iteration, elapsed, tokens, last event.

    It redraws when the ledger, a claim or a roadmap changes; Ctrl-C quits.
    """
    from agentcfg import watch as live  # rich loads only for this command

    time = clock()
    if once:
        width = os.environ.get("COLUMNS", "")  # the shell's width: under 80 the table narrows
        columns = int(width) if width.isdigit() and 20 <= int(width) <= 1000 else None
        click.echo(live.frame(workspace(), os.environ, time.now(), columns), nl=False)
    else:
        live.follow(workspace(), os.environ, time.now, sleep=time.sleep)
