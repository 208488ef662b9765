"""`agentcfg hooks install|uninstall`: wire the stop hook into a host's config file."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import click

from agentcfg import install
from agentcfg.agents import agent_session, require_person
from agentcfg.commands import say, workspace
from agentcfg.hosts.registry import HOSTS

host_option = click.option(
    "--host", type=click.Choice(HOSTS), required=True, help="The agent host."
)
scope_option = click.option(
    "--scope",
    type=click.Choice(("project", "user")),
    default="project",
    show_default=True,
    help="This project's config file, or the one in your home folder.",
)
dry_run_option = click.option("--dry-run", is_flag=True, help="Show the change without writing it.")


@click.group()
def hooks() -> None:
    """Install the stop hook into an agent host's config file."""


@hooks.command("install")
@host_option
@scope_option
@click.option(
    "--trust",
    is_flag=True,
    help="Also write the trust the host needs before it runs the hook "
    "(Codex: the project and the hook's hash, in $CODEX_HOME/config.toml).",
)
@dry_run_option
def install_command(host: str, scope: str, trust: bool, dry_run: bool) -> None:
    """Merge the stop hook into the host's config file (idempotent). With --trust, refused
    inside any agent's session: the host's trust is the person's to give."""
    ws = workspace()
    if trust and not dry_run:
        require_person("agentcfg hooks install --trust", agent_session(os.environ, ws=ws))
    wiring = install.wire(
        host, scope, ws.root, Path.home(), os.environ, trust=trust, dry_run=dry_run
    )
    _report(wiring, dry_run)


@hooks.command("uninstall")
@host_option
@scope_option
@dry_run_option
def uninstall_command(host: str, scope: str, dry_run: bool) -> None:
    """Take out exactly what install added, trust included."""
    wiring = install.wire(
        host, scope, workspace().root, Path.home(), os.environ, remove=True, dry_run=dry_run
    )
    _report(wiring, dry_run)


def _report(wiring: install.Wiring, dry_run: bool) -> None:
    for change in wiring.changes:
        _report_change(change, dry_run)
    for finding in wiring.missing:
        say(f"{finding.level}: {finding.message}")
        if finding.fix:
            say(f"  fix: {finding.fix}")


def _report_change(change: install.Change, dry_run: bool) -> None:
    shown = _shown(change.path)
    would = "would be " if dry_run else ""
    messages = {
        "created": f"{shown} {would}created with {change.what}",
        "updated": f"{shown} {would}updated",
        "removed": f"{shown} {would}removed: it held nothing but {change.what}",
        "unchanged": f"{shown} unchanged: nothing to do",
        "absent": f"{shown} does not exist: nothing to do",
    }
    say(messages[change.action])
    if change.before != change.after:
        before = (change.before or b"").decode("utf-8", "replace").splitlines(keepends=True)
        after = (change.after or b"").decode("utf-8", "replace").splitlines(keepends=True)
        diff = difflib.unified_diff(before, after, f"{shown} (before)", f"{shown} (after)")
        say("".join(diff).rstrip("\n"))


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)
