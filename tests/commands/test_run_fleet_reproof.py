"""`agentcfg run --agents 2` as a process, with a scripted host that, in each member's
worktree, closes its leased step by its proof and ticks every other box by hand: the forged
ticks are reopened when the member's branch is integrated, so every step is really done once,
and the fleet's final re-proof is committed on its branch for a fresh clone's audit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, run_cli
from tests.helpers import git

STEPS = 4
ROADMAP = "---\nexecution:\n  mode: autonomous\n---\n## Phase 1\n" + "".join(
    f"- [ ] **1.{n}** Make s{n} <!-- verify: test -f s{n}.txt -->\n" for n in range(1, STEPS + 1)
)
FAKE = """#!{python}
import json, os, re, subprocess, sys
root = os.getcwd()
lease = json.load(open(os.path.join(root, "state", "fleet", "demo.json")))
step = lease["step"]
open(os.path.join(root, "s" + step.split(".")[1] + ".txt"), "w").write(step)
subprocess.run([sys.executable, "-m", "agentcfg", "roadmap", "done", "demo", step],
               cwd=root, check=True, capture_output=True)
path = os.path.join(root, "roadmaps", "demo.md")
text = open(path).read()
open(path, "w").write(text.replace("- [ ]", "- [x]"))
"""


def test_a_fleet_whose_members_tick_every_box_still_does_every_step(
    ws: Path, tmp_path: Path
) -> None:
    (ws / "roadmaps" / "demo.md").write_text(ROADMAP)
    (ws / ".gitignore").write_text("state/\n")
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "start")
    assert run_cli("hooks", "install", "--host", "claude", "--scope", "user").exit_code == 0
    assert run_cli("roadmap", "trust", "demo").exit_code == 0
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "claude"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AGENTCFG_", "CLAUDE_", "XDG_"))
    }
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "xdg"),  # the person's trust and key, as run_cli's
        PATH=f"{folder}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=str(REPO),
        GIT_AUTHOR_NAME="p", GIT_AUTHOR_EMAIL="p@example.invalid",
        GIT_COMMITTER_NAME="p", GIT_COMMITTER_EMAIL="p@example.invalid",
    )  # fmt: skip
    ran = subprocess.run(
        [sys.executable, "-m", "agentcfg", "run", "demo", "--host", "claude", "--agents", "2"],
        cwd=ws, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    for n in range(1, STEPS + 1):  # every step really done, not ticked in passing
        assert (ws / f"s{n}.txt").exists(), ran.stdout
    events = [json.loads(line) for line in (ws / "state" / "run-continuation.jsonl").open()]
    integrated = [e for e in events if e["event"] == "integrated"]
    assert sorted(e["step"] for e in integrated) == [f"1.{n}" for n in range(1, STEPS + 1)]
    assert any(e["unticked"] for e in integrated)
    assert "re-proof 4 steps in " in ran.stdout
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws), str(clone))
    audit = subprocess.run(
        [sys.executable, "-m", "agentcfg", "roadmap", "audit", "demo", "--json"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert audit.returncode == 0, audit.stdout
    assert json.loads(audit.stdout)["counts"]["proven"] == STEPS
