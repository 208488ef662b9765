"""`agentcfg leases`: which fleet member holds which step, and a person's release."""

from __future__ import annotations

from typing import Any

import click

from agentcfg.commands import emit_json, json_option, now, say, workspace
from agentcfg.core.times import iso
from agentcfg.fleet.leases import Lease, Store

coordinate_option = click.option(
    "--coordinate", metavar="REMOTE", help="Read the leases on this git remote (default: here)."
)


class _Leases(click.Group):
    """`agentcfg leases [SLUG]` lists; a first word that is no subcommand is the slug."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_Leases)
def leases() -> None:
    """Step leases of fleets: `agentcfg leases [SLUG]` lists them."""


@leases.command("list")
@click.argument("slug", required=False)
@coordinate_option
@json_option
def list_command(slug: str | None, coordinate: str | None, as_json: bool) -> None:
    """List the step leases (of roadmaps/<SLUG>.md, or of every roadmap)."""
    ws = workspace()
    found = Store.open(ws.root, coordinate).all(None if slug is None else ws.canonical(slug))
    moment = now()
    if as_json:
        emit_json([{**lease.to_json(), "state": _state(lease, moment)} for lease in found])
        return
    if not found:
        click.echo("no step leases")
    for lease in found:
        say(_line(lease, moment))


@leases.command("release")
@click.argument("slug")
@click.argument("step")
@coordinate_option
@json_option
def release_command(slug: str, step: str, coordinate: str | None, as_json: bool) -> None:
    """Free a step's lease, whoever holds it (a person's override)."""
    ws = workspace()
    slug = ws.canonical(slug)
    released = Store.open(ws.root, coordinate).release(slug, step, None, now=now())
    result: dict[str, Any] = {"slug": slug, "step": step, "released": released}
    if as_json:
        emit_json(result)
    elif released:
        click.echo(f"released the lease on `{slug}` step {step}; the step is open to the fleet")
    else:
        click.echo(f"`{slug}` step {step} has no held lease")


def _state(lease: Lease, moment: float) -> str:
    if lease.released:
        return "released"
    if lease.forged(moment):  # written by hand: it holds its step for no one
        return "forged"
    return "held" if lease.live(moment) else "expired"


def _line(lease: Lease, moment: float) -> str:
    state = _state(lease, moment)
    where = f"{lease.slug} {lease.step}: {state}, fence {lease.fence}"
    if lease.released:
        return where
    return (
        f"{where}; {lease.holder} ({lease.host} on {lease.machine}), "
        f"taken {iso(lease.taken)}, expires {iso(lease.expires)}"
    )
