"""`agentcfg doctor`: the wiring, config, roadmaps, claim and state, each with its fix."""

from __future__ import annotations

import os
from pathlib import Path

import click

from agentcfg.commands import emit_json, json_option, say, workspace
from agentcfg.doctor import examine


@click.command("doctor")
@click.option(
    "--probe", is_flag=True, help="Run each registered hook command on a synthetic payload."
)
@json_option
def doctor(probe: bool, as_json: bool) -> None:
    """Check host wiring, agentcfg.yaml, every roadmap, this session's claim and state/."""
    findings = examine(workspace(), Path.home(), os.environ, probe)
    errors = sum(f.level == "error" for f in findings)
    if as_json:
        emit_json([f._asdict() for f in findings])
    else:
        for finding in findings:
            say(f"{finding.level:<8} {finding.subject}: {finding.message}")
            if finding.fix and finding.level != "ok":
                say(f"         fix: {finding.fix}")
        warnings = sum(f.level == "warning" for f in findings)
        say(f"{errors} errors, {warnings} warnings")
    if errors:
        raise SystemExit(1)
