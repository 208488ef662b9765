"""A fleet on a simulated host, for `make bench` and tests: no model, no network.

Each member is a process of its own running the fleet's member loop (leases, sync, integration
and its re-verification are agentcfg's own); the host's work on a step is a fixed wait, then
the step's file written and the step closed by its proof, as an agent does. Each member tells
when its work began and ended, so what the fleet itself costs is the rest of its time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcfg import loading, state
from agentcfg.contract import trust
from agentcfg.contract.verify import done
from agentcfg.fleet import drive as fleet_run
from agentcfg.fleet import steps as fleet
from agentcfg.fleet.drive import Fleet
from agentcfg.fleet.leases import TTL, Lease
from agentcfg.workspace import Workspace

SLUG = "sim"
REMOTE = "origin"
IDENTITY = ("-c", "user.name=sim", "-c", "user.email=sim@example.invalid")


def roadmap_text(steps: int) -> str:
    """`steps` steps any member may take side by side, each proven by the file it makes."""
    head = (
        "---\nexecution:\n  mode: autonomous\n  fleet:\n    order: free\n---\n# Sim\n\n## Phase 1\n"
    )
    return head + "".join(
        f"- [ ] **1.{n}** [P] Make s{n} <!-- verify: test -f s{n}.txt -->\n"
        for n in range(1, steps + 1)
    )


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *IDENTITY, *args],
        check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL,
    ).stdout.strip()  # fmt: skip


def make_project(root: Path, steps: int, env: Mapping[str, str], remote: bool) -> str | None:
    """A committed project at `root` whose roadmap `sim` the person trusts; with `remote`, a
    bare repository beside it as its `file://` remote (the name returned, to coordinate by)."""
    (root / "roadmaps").mkdir(parents=True)
    (root / "roadmaps" / f"{SLUG}.md").write_text(roadmap_text(steps))
    (root / ".gitignore").write_text("state/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-qm", "start")
    ws = Workspace(root)
    trust.record(ws, SLUG, loading.load(ws, SLUG).steps, env, time.time())
    if not remote:
        return None
    bare = root.parent / f"{root.name}-remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, capture_output=True)
    git(root, "remote", "add", REMOTE, bare.as_uri())
    git(root, "push", "-q", REMOTE, "main")
    return REMOTE


@dataclass(frozen=True)
class Member:
    """What one member process did: its exit code, its time, and each step's work as a span."""

    code: int
    began: float
    ended: float
    work: tuple[tuple[str, float, float], ...]  # (step, from, until)

    @property
    def working(self) -> float:
        return sum(until - start for _, start, until in self.work)

    @property
    def own(self) -> float:
        """The member's time that was not its host's work: the fleet's own cost."""
        return self.ended - self.began - self.working


@dataclass(frozen=True)
class Outcome:
    wall: float
    members: tuple[Member, ...]
    integrated: int
    open_left: int

    @property
    def own_per_step(self) -> float | None:
        """The fleet's own time (lease, sync, integration with its re-verification, release,
        waiting its turn), summed over the members, per step integrated."""
        if not self.integrated:
            return None
        return sum(m.own for m in self.members) / self.integrated


def run(
    root: Path, agents: int, step_seconds: float, env: Mapping[str, str], coordinate: str | None
) -> Outcome:
    """A fleet of `agents` member processes on the project at `root` (made by `make_project`),
    until each has ended: the roadmap is closed by then, so each fleet needs a project of its own."""
    plan = fleet_run.plan(root, SLUG, "claude", None, coordinate, TTL)
    members = fleet_run.prepare_members(plan, agents, env)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(root), str(n), str(step_seconds), coordinate or ""],
            cwd=str(member.root), env={**env, "AGENTCFG_ROOT": str(member.root)},
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
        )
        for n, member in enumerate(members, 1)
    ]  # fmt: skip
    told = [proc.communicate()[0] for proc in procs]
    wall = time.perf_counter() - started
    done_members = tuple(_member(json.loads(out)) for out in told)
    events = [state.loads(line) for line in state.ledger_lines(Workspace(root).state)]
    integrated = sum(1 for e in events if isinstance(e, dict) and e.get("event") == "integrated")
    open_left = sum(1 for s in loading.load(Workspace(root), SLUG).steps if s.is_open)
    return Outcome(wall, done_members, integrated, open_left)


def _member(data: dict[str, Any]) -> Member:
    work = tuple((str(s), float(a), float(b)) for s, a, b in data["work"])
    return Member(int(data["code"]), float(data["began"]), float(data["ended"]), work)


def member(root: Path, n: int, step_seconds: float, coordinate: str | None) -> dict[str, Any]:
    """Member `n`'s whole part, its host working each leased step for `step_seconds`."""
    env = dict(os.environ)
    plan = Fleet(root, SLUG, "main", "claude", coordinate)
    spans: list[tuple[str, float, float]] = []

    def work(tree: Workspace, lease: Lease) -> tuple[str, int]:
        start = time.perf_counter()
        time.sleep(step_seconds)
        (tree.root / f"s{lease.step.split('.')[1]}.txt").write_text(lease.step)
        fleet.require_lease(tree, SLUG, lease.step)
        closed = done(tree, SLUG, lease.step, env).marked
        spans.append((lease.step, start, time.perf_counter()))
        return ("complete", 0) if closed else ("halt-unproven", 1)

    began = time.perf_counter()
    code = fleet_run.member_loop(
        plan, Workspace(plan.worktree(n)), n, work, env, timeout=60.0, say=_tell
    )
    return {"code": code, "began": began, "ended": time.perf_counter(), "work": spans}


def _tell(line: str) -> None:
    """A member's own lines go to stderr: its stdout is the JSON the fleet's runner reads."""
    print(line, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one member of a simulated fleet")
    parser.add_argument("root", type=Path)
    parser.add_argument("member", type=int)
    parser.add_argument("step_seconds", type=float)
    parser.add_argument("coordinate", nargs="?", default="")
    args = parser.parse_args(argv)
    told = member(args.root, args.member, args.step_seconds, args.coordinate or None)
    print(json.dumps(told))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
