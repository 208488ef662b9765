"""What many test files ask of a workspace: its ledger's events, git run in a repository as a
person with a name of their own, a simulated session that claimed the demo roadmap, and the
path of a session's run state; a source file's syntax, parsed once for the tests that read the
whole package's."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import click

from agentcfg import claims
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost
from tests import inprocess

LEDGER = "run-continuation.jsonl"


@functools.cache
def parsed(source: str) -> ast.Module:
    """`source`'s syntax tree, parsed once a process (read it, never change it)."""
    return ast.parse(source)


@functools.cache
def nodes(source: str) -> tuple[ast.AST, ...]:
    """Every node of `source`'s syntax tree, as `ast.walk` gives them, walked once a process."""
    return tuple(ast.walk(parsed(source)))


def ledger(
    root: Path | Workspace, claims: bool = False, leave: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The ledger's events in order: the `claimed` events that start runs only when asked for,
    none of the events named in `leave`."""
    folder = root.state if isinstance(root, Workspace) else root / "state"
    path = folder / LEDGER
    lines = path.read_text().splitlines() if path.exists() else []
    left = set(leave) if claims else {*leave, "claimed"}
    return [e for e in map(json.loads, lines) if e["event"] not in left]


def git(repo: Path, *args: str) -> str:
    """`git ARGS` in `repo`, committing as a person of its own; what it printed, stripped."""
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=p", "-c", "user.email=p@example.invalid", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def events(root: Path) -> list[str]:
    """The names of the ledger's events, the `claimed` ones left out."""
    return [e["event"] for e in ledger(root)]


def started(ws: Path, *claim_args: str, env: dict[str, str] | None = None) -> SimulatedHost:
    """A simulated session that has spoken once and claimed the demo roadmap."""
    host = SimulatedHost(ws, env=env, run=inprocess.run)
    host.human("go")
    assert host.claim("demo", *claim_args).returncode == 0
    return host


def run_file(root: Path, session: str, slug: str = "demo") -> Path:
    """Where a session's run state on a roadmap is kept."""
    return root / "state" / "runs" / f"{claims.session_key(session)}-{slug}.json"


def subcommands(group: click.Group) -> Iterator[tuple[str, click.Command]]:
    """A group's commands by name, as click finds them (the top group imports each on ask)."""
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        yield name, command
