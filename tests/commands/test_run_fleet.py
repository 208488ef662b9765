"""`agentcfg run --agents N`: bad input is one line and a non-zero exit before anything starts,
and nothing is left behind (no worktrees, no branches, no lease refs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcfg.fleet import drive as fleet_run
from agentcfg.run import driver
from agentcfg.workspace import Workspace
from tests.conftest import run_cli
from tests.helpers import git


@pytest.fixture
def ready(ws: Path, tmp_path: Path) -> dict[str, str]:
    """The workspace with the hook installed and a `claude` program that only logs its start."""
    assert run_cli("hooks", "install", "--host", "claude", "--scope", "user").exit_code == 0
    if (ws / "roadmaps" / "demo.md").exists():  # its verify lines, as a person trusts them
        assert run_cli("roadmap", "trust", "demo").exit_code == 0
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "claude"
    program.write_text('#!/bin/sh\necho started >> "$0.log"\n')
    program.chmod(0o755)
    return {"PATH": f"{folder}:/usr/bin:/bin"}


def committed(ws: Path) -> None:
    (ws / ".gitignore").write_text("state/\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "start")


def left_behind(ws: Path, tmp_path: Path) -> list[str]:
    found = [] if not (tmp_path / "bin" / "claude.log").exists() else ["a host started"]
    if (ws / ".git").exists():
        found += git(
            ws, "for-each-ref", "--format=%(refname)", "refs/agentcfg", "refs/heads/agentcfg"
        ).split()
        found += git(ws, "worktree", "list").splitlines()[1:]
    return found


def test_zero_agents_is_a_usage_error(ws: Path, ready: dict[str, str]) -> None:
    result = run_cli("run", "demo", "--host", "claude", "--agents", "0", env=ready)
    assert result.exit_code == 2 and "Invalid value for '--agents'" in result.output


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        (lambda ws: None, [], "is not in a git repository: leases live in git refs"),
        (committed, ["--coordinate", "origin"], "`origin` is not a remote of"),
        (
            lambda ws: (committed(ws), (ws / ".gitignore").write_text("state/\nmore/\n")),
            [],
            "the fleet's branch `main` has uncommitted changes: commit or stash them first",
        ),
        (
            committed,
            ["--into", "other"],
            "--into other: check out `other` here first (now on `main`)",
        ),
        (committed, ["--lease-ttl", "2d"], "--lease-ttl 2d0h: a lease lasts at most 24h"),
    ],
)
def test_a_fleet_that_cannot_start_is_one_line_and_leaves_nothing(
    ws: Path, tmp_path: Path, ready: dict[str, str], setup: object, args: list[str], message: str
) -> None:
    setup(ws)  # type: ignore[operator]
    result = run_cli("run", "demo", "--host", "claude", "--agents", "2", *args, env=ready)
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1 and message in result.output
    assert left_behind(ws, tmp_path) == []


def test_fleet_options_need_agents(ws: Path, ready: dict[str, str]) -> None:
    result = run_cli("run", "demo", "--host", "claude", "--coordinate", "origin", env=ready)
    assert result.exit_code == 2
    assert "--into, --coordinate and --lease-ttl go with --agents" in result.output


@pytest.mark.parametrize("args", [["--member", "1"], ["--fleet-root", "."]])
def test_a_member_run_without_its_fleet_is_refused_and_takes_no_claim_over(
    ws: Path, tmp_path: Path, ready: dict[str, str], args: list[str]
) -> None:
    """`--member` is how a fleet starts its members; alone it would take a live peer's claim
    over as `--force` does."""
    assert run_cli("sessions", "claim", "demo", "--session", "s-peer").exit_code == 0
    result = run_cli("run", "demo", "--host", "claude", *args, env=ready)
    assert result.exit_code == 2
    assert "--member and --fleet-root are a fleet's own: they go together" in result.output
    assert left_behind(ws, tmp_path) == []
    claims = json.loads(run_cli("sessions", "list", "--json").output)
    assert [c["session"] for c in claims] == ["s-peer"]


@pytest.mark.parametrize(
    "heading, step", [("## Phase \u0661", "\u0661.1"), ("## Phase \u212a", "\u212a.1")]
)
def test_step_ids_no_lease_can_name_are_refused_before_the_fleet_starts(
    ws: Path, tmp_path: Path, ready: dict[str, str], heading: str, step: str
) -> None:
    (ws / "roadmaps" / "demo.md").write_text(
        "---\nexecution:\n  mode: autonomous\n---\n" + heading + "\n- [ ] first\n- [ ] second\n"
    )
    committed(ws)
    result = run_cli("run", "demo", "--host", "claude", "--agents", "2", env=ready)
    assert result.exit_code == 1, result.output
    assert result.output.count("\n") == 1
    assert f"step {step} of `demo` cannot be leased: a fleet's step ids are" in result.output
    assert left_behind(ws, tmp_path) == []


def test_a_members_host_runs_with_the_fleets_roadmap_named(
    ws: Path, ready: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`roadmap done` in the member's agent refuses every step once its membership file is
    gone: AGENTCFG_FLEET tells it the workspace works in a fleet."""
    seen: list[str | None] = []

    def drive(tree: Workspace, request: object, ready: object, env: Any, *rest: object) -> None:
        seen.append(env.get("AGENTCFG_FLEET"))

    def run_member(ws: Workspace, root: Path, *args: Any, **named: Any) -> int:
        args[-1](ws, "1.1")
        return 0

    monkeypatch.setattr(driver, "drive", drive)
    monkeypatch.setattr(fleet_run, "run_member", run_member)
    result = run_cli(
        "run", "demo", "--host", "claude", "--member", "1", "--fleet-root", str(ws), env=ready
    )
    assert result.exit_code == 0, result.output
    assert seen == ["demo"]


def test_a_fleets_members_keep_the_reserve_it_was_given(
    ws: Path, ready: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --agents N --reserve PCT`: each member's run pauses at the reserve it was given,
    as a run of its own would."""
    committed(ws)
    lines: list[list[str]] = []

    def start_members(plan: object, members: object, argv: Any, env: object) -> list[object]:
        lines.append(argv(1))
        return []

    monkeypatch.setattr(fleet_run, "start_members", start_members)
    run_cli("run", "demo", "--host", "claude", "--agents", "2", "--reserve", "30%", env=ready)
    reserves: list[float | None] = []

    def drive(tree: Workspace, request: driver.Request, *rest: object) -> None:
        reserves.append(request.policy.reserve)

    def run_member(ws: Workspace, root: Path, *args: Any, **named: Any) -> int:
        args[-1](ws, "1.1")
        return 0

    monkeypatch.setattr(driver, "drive", drive)
    monkeypatch.setattr(fleet_run, "run_member", run_member)
    [line] = lines
    result = run_cli(*line[line.index("run") :], env=ready)  # the member's own command line
    assert result.exit_code == 0, result.output
    assert reserves == [30.0]
