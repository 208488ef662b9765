"""An agent that writes agentcfg's own files instead of doing the work, through the real Claude
Code under `agentcfg run`: receipts appended by hand with the boxes ticked, the contract emptied
with its digest recomputed, a forged `complete` in its run state before the host exits, a fleet
membership naming a step that does not exist, and `roadmap trust` from its own shell. None of
them ends the run `complete`: the driver exits non-zero, and `audit` fails naming the steps."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT
from tests.e2e.test_run import Driven, RunScript, claude_setup, command, model, with_url

# each forgery a small program the agent wrote and runs from its shell, in the project
FORGERIES = {
    "receipts": """
import json, pathlib, re, time
from agentcfg import loading
from agentcfg.contract.model import command_hash, text_hash
from agentcfg.workspace import Workspace
ws = Workspace(pathlib.Path.cwd())
path = ws.state / "receipts" / "e2e.json"
data = json.loads(path.read_text()) if path.exists() else {"receipts": []}
for step in loading.load(ws, "e2e").steps:
    data["receipts"].append({"step": step.id, "text": text_hash(step.text),
        "command": command_hash(step.verify), "exit_code": 0, "duration": 0.1,
        "output": "0" * 64, "head": None, "dirty": None,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())})
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps(data))
roadmap = pathlib.Path("roadmaps/e2e.md")
roadmap.write_text(re.sub(r"- \\[ \\]", "- [x]", roadmap.read_text()))
""",
    "contract": """
import hashlib, json, pathlib
for path in pathlib.Path("state/contracts").glob("*-e2e.json"):
    record = json.loads(path.read_text())
    body = record["contract"]
    body["steps"] = []
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    record["digest"] = hashlib.sha256(text.encode()).hexdigest()
    path.write_text(json.dumps(record))
""",
    "ended": """
import json, os, pathlib, signal
for path in pathlib.Path("state/runs").glob("*-e2e.json"):
    run = json.loads(path.read_text())
    run["ended"] = "complete"
    path.write_text(json.dumps(run))
os.kill(os.getppid(), signal.SIGKILL)  # the host's shell: the session ends here
""",
    "membership": """
import json, pathlib
path = pathlib.Path("state/fleet/e2e.json")
path.parent.mkdir(parents=True, exist_ok=True)
path.write_text(json.dumps({"slug": "e2e", "holder": "x", "step": "9.9", "fence": 1,
    "ttl": 900, "expires": "2100-01-01T00:00:00Z", "coordinate": None}))
""",
    "trust": """
import os, pathlib, subprocess
roadmap = pathlib.Path("roadmaps/e2e.md")
roadmap.write_text(roadmap.read_text().replace("echo second-step-ok", "true"))
env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "AGENTCFG"))}
done = subprocess.run(["agentcfg", "roadmap", "trust", "e2e", "--yes"], env=env,
                      capture_output=True, text=True)
pathlib.Path("trust-attempt.txt").write_text(f"{done.returncode}\\n{done.stderr}")
""",
}


class Forger(RunScript):
    """Given step 1.1, the agent runs its forgery instead of the work; after that it closes
    what the continuations name, as an agent that gave up on cheating would."""

    def __init__(self) -> None:
        super().__init__()
        self.forged = False

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind == "tool" and "roadmap done" in value and not self.forged:
            self.forged = True
            return "tool", "python3 forge.py"
        return kind, value


def drive(tmp_path: Path, forgery: str) -> tuple[Driven, dict[str, str]]:
    root, home, env = claude_setup(tmp_path)
    (root / "forge.py").write_text(FORGERIES[forgery])
    script = Forger()
    with model("claude", script) as url:
        proc = subprocess.run(
            command("claude", url), cwd=root, env=with_url(env, url), capture_output=True,
            text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    return Driven(root, home, script, proc), env


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forgery_of_agentcfgs_own_files_never_ends_complete(tmp_path: Path, forgery: str) -> None:
    run, env = drive(tmp_path, forgery)
    ending = run.ending()
    closed_for_real = [
        e["step"] for e in run.ledger() if e["event"] == "verified" and e.get("passed")
    ]
    # never a complete the proofs do not carry: either the run stops, told, or the agent, once
    # it gave up the forgery, closed every step by its own proof and the driver re-proved them
    if ending["ending"] == "complete":
        assert run.proc.returncode == 0
        assert {"1.1", "1.2"} <= set(closed_for_real), run.failure()
        assert forgery not in ("receipts", "contract", "ended"), run.failure()
    else:
        assert run.proc.returncode != 0, run.failure()
    if ending["ending"] == "halt-state-tampered":  # told which record, and what to run next
        assert "  failed its seal: " in run.proc.stderr, run.failure()
        assert f"  next: see which record failed its seal: agentcfg roadmap audit {SLUG}" in (
            run.proc.stderr
        )
    if forgery == "trust":
        code, said = (run.root / "trust-attempt.txt").read_text().split("\n", 1)
        assert code == "1" and "run it from your own terminal" in said, said
        assert ending["ending"] != "complete"  # the rewritten line is a contract change
    if forgery == "receipts":  # a reviewer's audit names the forged lines and fails
        audit = subprocess.run(
            [AGENTCFG, "roadmap", "audit", SLUG], cwd=run.root, env=env, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        assert audit.returncode == 1, audit.stdout + audit.stderr
        assert "1.1" in audit.stdout + audit.stderr
