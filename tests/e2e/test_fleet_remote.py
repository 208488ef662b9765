"""Three machines, one fleet: three clones of one bare repository each run
`agentcfg run --agents 1 --coordinate origin --into main` at once, with a home of their own and
a scripted model of their own, under the real Claude Code binary, as three jobs of the fleet
workflow's matrix do. No clone has the stop hook installed: the fleet installs it for its member.

Afterwards the remote's branch holds every step once, each proven there; a fresh clone of it,
audited by a fourth person, proves every step; each clone's report tells its own member's steps.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg, binary
from tests.e2e.test_fleet import FleetScript
from tests.e2e.test_run import model, with_url

STEPS = 6
MACHINES = 3
BRANCH = "main"
# the steps may run side by side (`[P]`): each makes a file of its own
ROADMAP = "---\nexecution: {mode: autonomous}\n---\n## Phase 1 — Files\n" + "".join(
    f"- [ ] **1.{n}** [P] Make file {n} <!-- verify: test -f out/1.{n}.txt -->\n"
    for n in range(1, STEPS + 1)
)


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def person(tmp_path: Path, name: str) -> dict[str, str]:
    """A machine's own home, state and config folders, with Claude Code on PATH."""
    home = tmp_path / f"home-{name}"
    home.mkdir()
    return {
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATH": f"{binary('claude-2.1.328', 'claude').parent}:{Path(AGENTCFG).parent}:"
        f"{os.environ.get('PATH', '/usr/bin:/bin')}",
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def shared_remote(tmp_path: Path) -> Path:
    """The bare repository the machines share: the roadmap committed, no host settings."""
    seed = tmp_path / "seed"
    (seed / "roadmaps").mkdir(parents=True)
    (seed / "roadmaps" / f"{SLUG}.md").write_text(ROADMAP)
    (seed / ".gitignore").write_text("state/\n")
    git(seed, "init", "-q", "-b", BRANCH)
    git(seed, "add", ".")
    git(seed, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "roadmap")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    return remote


def machine(tmp_path: Path, remote: Path, k: int) -> tuple[Path, dict[str, str]]:
    """One matrix job: a clone of its own, its person's trust of the roadmap, a git name."""
    clone = tmp_path / f"machine-{k}"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "config", "user.name", f"fleet {k}")
    git(clone, "config", "user.email", f"fleet-{k}@example.invalid")
    env = person(tmp_path, str(k))
    agentcfg(clone, env, "roadmap", "trust", SLUG, "--yes")
    return clone, env


def ledger(root: Path) -> list[dict[str, Any]]:
    path = root / "state" / "run-continuation.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_three_clones_of_one_remote_close_six_steps_once_each(tmp_path: Path) -> None:
    remote = shared_remote(tmp_path)
    machines = [machine(tmp_path, remote, k) for k in range(1, MACHINES + 1)]
    scripts = [FleetScript() for _ in machines]
    outputs: list[str] = []
    with (
        model("claude", scripts[0]) as u1,
        model("claude", scripts[1]) as u2,
        model("claude", scripts[2]) as u3,
    ):
        procs = [
            subprocess.Popen(
                [AGENTCFG, "run", SLUG, "--host", "claude", "--agents", "1",
                 "--coordinate", "origin", "--into", BRANCH, "--", "--allowedTools", "Bash"],
                cwd=clone, env=with_url(env, url), stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL,
            )
            for (clone, env), url in zip(machines, (u1, u2, u3), strict=True)
        ]  # fmt: skip
        for proc in procs:
            outputs.append(proc.communicate(timeout=TIMEOUT * 3)[0])
    told = "\n=====\n".join(outputs)
    assert [proc.returncode for proc in procs] == [0] * MACHINES, told

    # the remote's branch: every step ticked once, none open, every verify line passing there
    check = tmp_path / "check"
    git(tmp_path, "clone", "-q", "--branch", BRANCH, str(remote), str(check))
    roadmap = (check / "roadmaps" / f"{SLUG}.md").read_text()
    assert roadmap.count("- [x]") == STEPS and "- [ ]" not in roadmap, told
    for n in range(1, STEPS + 1):
        assert (check / "out" / f"1.{n}.txt").read_text().strip() == f"1.{n}", told

    # each step integrated exactly once, across the machines, and at least two of them worked
    integrated = [
        (k, e["step"])
        for k, (clone, _) in enumerate(machines, 1)
        for e in ledger(clone)
        if e["event"] == "integrated"
    ]
    assert sorted(step for _, step in integrated) == [f"1.{n}" for n in range(1, STEPS + 1)], told
    assert len({k for k, _ in integrated}) >= 2, told
    merges = git(check, "log", "--merges", "--format=%s", BRANCH).splitlines()
    assert len(merges) == STEPS, merges

    # a fourth person's fresh clone of the branch proves every step the fleet closed
    reviewer = person(tmp_path, "reviewer")
    audited = subprocess.run(
        [AGENTCFG, "roadmap", "audit", SLUG, "--json"],
        cwd=check, env=reviewer, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert audited.returncode == 0, audited.stdout + audited.stderr
    found = json.loads(audited.stdout)
    assert found["counts"]["proven"] == STEPS, found
    assert all(s["receipt"]["exit_code"] == 0 for s in found["steps"]), found

    # each machine's member told its own steps, and only the fleet's ending said complete
    for (clone, env), output in zip(machines, outputs, strict=True):
        own = sorted(step for k, step in integrated if machines[k - 1][0] == clone)
        for step in own:
            assert f"step {step} integrated" in output, output
        assert "complete — roadmap" not in output, output
        assert f"fleet on `{SLUG}`: complete;" in output, output
        report = subprocess.run(
            [AGENTCFG, "report", "--json"], cwd=clone, env=env,
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert report.returncode == 0, report.stderr
        fleet = json.loads(report.stdout)["fleet"]  # this clone's member, and its steps only
        assert fleet["integrated"] == len(own), fleet
        assert fleet["members"]["1"]["integrated"] == len(own), fleet
