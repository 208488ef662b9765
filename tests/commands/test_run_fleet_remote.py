"""Two machines, one fleet, as processes: two clones of one bare repository, each a person of its
own (home, state, seal key) with no stop hook installed, each `agentcfg run --agents 1
--coordinate origin` at once with a scripted host. Each member speaks for its own steps; each
machine's fleet ending says `complete` with counts that add up to the roadmap; a fresh clone of
the branch, audited by a third person, proves every step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.commands.test_run_fleet_reproof import git
from tests.conftest import REPO

STEPS = 4
ROADMAP = "---\nexecution:\n  mode: autonomous\n---\n## Phase 1\n" + "".join(
    f"- [ ] **1.{n}** [P] Make s{n} <!-- verify: test -f s{n}.txt -->\n"
    for n in range(1, STEPS + 1)
)
# the host: makes its leased step's file and closes the step by its proof
FAKE = """#!{python}
import json, os, subprocess, sys
root = os.getcwd()
step = json.load(open(os.path.join(root, "state", "fleet", "demo.json")))["step"]
open(os.path.join(root, "s" + step.split(".")[1] + ".txt"), "w").write(step)
subprocess.run([sys.executable, "-m", "agentcfg", "roadmap", "done", "demo", step],
               cwd=root, check=True, capture_output=True)
"""


def person(tmp_path: Path, name: str, folder: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTCFG_", "CLAUDE_", "XDG_"))
    }
    env.update(
        HOME=str(tmp_path / f"home-{name}"),
        XDG_STATE_HOME=str(tmp_path / f"state-{name}"),
        PATH=f"{folder}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(REPO),
        GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL="p@example.invalid",
        GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL="p@example.invalid",
    )  # fmt: skip
    return env


def agentcfg(cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentcfg", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.slow  # a scale test: two machines' fleets through a remote
def test_two_machines_each_tell_their_own_steps_and_counts_that_add_up(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    (seed / "roadmaps").mkdir(parents=True)
    (seed / "roadmaps" / "demo.md").write_text(ROADMAP)
    (seed / ".gitignore").write_text("state/\n")
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", ".")
    git(seed, "commit", "-qm", "start")
    remote = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(remote))
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "claude").write_text(FAKE.format(python=sys.executable))
    (folder / "claude").chmod(0o755)
    machines = []
    for name in ("a", "b"):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(remote), str(clone))
        env = person(tmp_path, name, folder)
        trusted = agentcfg(clone, env, "roadmap", "trust", "demo", "--yes")
        assert trusted.wait(timeout=60) == 0, trusted.communicate()[0]
        machines.append((clone, env))
    procs = [
        agentcfg(clone, env, "run", "demo", "--host", "claude", "--agents", "1",
                 "--coordinate", "origin", "--no-baseline")
        for clone, env in machines
    ]  # fmt: skip
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    told = "\n=====\n".join(outputs)
    assert [proc.returncode for proc in procs] == [0, 0], told

    here_total, whole = 0, []
    for output in outputs:
        mine = re.findall(r"^\[1\] step (1\.\d) integrated into `main`; the fleet goes on$",
                          output, re.MULTILINE)  # fmt: skip
        assert "complete — roadmap" not in output, output  # the member's `complete` is the fleet's
        end = re.search(
            r"^fleet on `demo`: complete; (\d+) steps? integrated here, (\d+) by other machines, "
            r"0 reopened, 0 open; member exits \[0\]$", output, re.MULTILINE,
        )  # fmt: skip
        assert end is not None, output
        here, elsewhere = int(end[1]), int(end[2])
        # what this machine saw closed while it ran: every step, unless the other one had
        # closed some before this one first looked at the remote
        assert here == len(mine) and here + elsewhere <= STEPS, output
        whole.append(here + elsewhere == STEPS)
        last = [line for line in output.splitlines() if line.startswith("[1] member done")]
        assert last == [f"[1] member done on `demo`: {here} step{'s' * (here != 1)} integrated"
                        + (f" ({', '.join(mine)})" if mine else "")
                        + "; no step is left open on the fleet's branch"], output  # fmt: skip
        here_total += here
    assert here_total == STEPS and any(whole), told

    check = tmp_path / "check"
    git(tmp_path, "clone", "-q", str(remote), str(check))
    reviewer = person(tmp_path, "reviewer", folder)
    audited = agentcfg(check, reviewer, "roadmap", "audit", "demo")
    shown = audited.communicate(timeout=60)[0]
    assert audited.returncode == 0, shown
    assert f"audit of roadmap `demo`: {STEPS} proven, 0 unproven" in shown
    assert (
        f"{STEPS} receipts read as the branch's history holds them: sealed with another "
        "person's key, which cannot be checked here; `agentcfg roadmap audit demo --rerun` "
        "runs their checks again"
    ) in shown
