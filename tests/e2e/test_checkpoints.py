"""Checkpoints under the real Claude Code: a run in a git repository keeps one checkpoint per
step, each the tree as it was before that step's work; `agentcfg rollback` brings the tree
back to before a step, opens that step's box again and keeps the later state under a ref."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg
from tests.e2e.test_run import RunScript, claude_setup, command, model, with_url


class WorkingScript(RunScript):
    """An agent whose every step leaves a file of its own behind before it closes the step."""

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and " roadmap done " in value:
            step = value.rsplit(" ", 1)[-1]
            return kind, f"echo 'work of step {step}' > work-{step}.txt && {value}"
        return kind, value


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout


def files_at(root: Path, ref: str) -> set[str]:
    return set(git(root, "ls-tree", "-r", "--name-only", ref).split())


def test_a_run_keeps_a_checkpoint_per_step_and_rollback_restores_one(tmp_path: Path) -> None:
    root, _home, env = claude_setup(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=p@example.com", "-c", "user.name=P", "commit", "-q", "-m", "start")
    script = WorkingScript()
    with model("claude", script) as url:
        proc = subprocess.run(
            command("claude", url), cwd=root, env=with_url(env, url), capture_output=True,
            text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert json.loads(proc.stdout)["ending"] == "complete"
    assert {"work-1.1.txt", "work-1.2.txt"} <= {p.name for p in root.iterdir()}

    listed = json.loads(agentcfg(root, env, "checkpoints", SLUG, "--json"))
    assert [(c["step"], c["n"]) for c in listed] == [("1.1", 1), ("1.2", 1)]
    before_first, before_second = (c["ref"] for c in listed)
    assert not {"work-1.1.txt", "work-1.2.txt"} & files_at(root, before_first)
    assert "work-1.1.txt" in files_at(root, before_second)
    assert "work-1.2.txt" not in files_at(root, before_second)
    ledger = (root / "state" / "run-continuation.jsonl").read_text().splitlines()
    taken = [json.loads(line) for line in ledger if '"checkpoint"' in line]
    assert [e["step"] for e in taken if e["event"] == "checkpoint"] == ["1.1", "1.2"]

    done = json.loads(agentcfg(root, env, "rollback", SLUG, "1.2", "--yes", "--json"))

    assert done["reopened"] == ["1.2"]
    assert (root / "work-1.1.txt").exists() and not (root / "work-1.2.txt").exists()
    roadmap = (root / "roadmaps" / f"{SLUG}.md").read_text()
    assert "- [x] **1.1**" in roadmap and "- [ ] **1.2**" in roadmap
    attempt = done["attempt"]
    assert attempt == f"refs/agentcfg/attempts/{SLUG}/1.2/1"
    assert git(root, "show", f"{attempt}:work-1.2.txt") == "work of step 1.2\n"
    assert "- [x] **1.2**" in git(root, "show", f"{attempt}:roadmaps/{SLUG}.md")
    audit = subprocess.run(
        [AGENTCFG, "roadmap", "audit", SLUG, "--json"], cwd=root, env=env, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    steps = {s["step"]: s["status"] for s in json.loads(audit.stdout)["steps"]}
    assert steps == {"1.1": "proven", "1.2": "open"}


class WreckingScript(WorkingScript):
    """Closes step 1.1, then only ever breaks things on step 1.2 and never closes it."""

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and value.endswith(" 1.2"):
            return "tool", "echo broken >> wreck.txt && rm -f work-1.1.txt"
        return kind, value


def test_a_run_that_stalls_mid_step_rolls_back_by_itself(tmp_path: Path) -> None:
    root, _home, env = claude_setup(tmp_path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.email=p@example.com", "-c", "user.name=P", "commit", "-q", "-m", "start")
    with model("claude", WreckingScript()) as url:
        proc = subprocess.run(
            command("claude", url, "--rollback-on-halt"), cwd=root, env=with_url(env, url),
            capture_output=True, text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL,
            check=False,
        )  # fmt: skip
    told = json.loads(proc.stdout)
    assert told["ending"] == "halt-stall", proc.stderr[-3000:]
    assert told["rollback"]["step"] == "1.2" and told["rollback"]["reopened"] == []
    assert not (root / "wreck.txt").exists()  # the tree as it was before step 1.2
    assert (root / "work-1.1.txt").read_text() == "work of step 1.1\n"
    assert "- [x] **1.1**" in (root / "roadmaps" / f"{SLUG}.md").read_text()
    attempt = told["rollback"]["attempt"]
    assert git(root, "show", f"{attempt}:wreck.txt").startswith("broken\n")
    assert f"    what was there is kept at {attempt}" in proc.stderr
    assert "  rolled roadmap `e2e` back to before step 1.2" in proc.stderr
