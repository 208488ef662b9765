"""`agentcfg run` decides `complete` from the re-proof it runs itself, never from a state file:
a scripted fake host that forges agentcfg's files (boxes ticked, receipts appended, `ended:
complete` written into the run's state, a fleet lease on no step) never makes the driver exit 0,
and `roadmap audit` names what the re-proof failed. Its forgeries carry good seals (it read the
person's key: an open store), so the re-proof is the layer under test. Each test runs
`agentcfg run` as a process."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agentcfg.run.model import EXIT_CODES
from tests.conftest import cli_process, run_cli, write_roadmap
from tests.helpers import ledger

BODY = """## Phase 1 — Build
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: test -f ladder.txt -->
- [ ] **1.3** Write the report <!-- verify: test -f report.txt -->
"""

# A Claude Code stand-in: each start does what `mode` says to agentcfg's own files, then exits.
FAKE = """#!{python}
import hashlib, json, os, re, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
mode = open(os.path.join(here, "mode")).read().strip()
args = sys.argv[1:]
flag = "--session-id" if "--session-id" in args else "--resume"
session = args[args.index(flag) + 1]
key = hashlib.sha256(session.encode()).hexdigest()[:32]
root = os.getcwd()
with open(os.path.join(here, "starts.log"), "a") as log:
    log.write(mode + "\\n")
def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()
from agentcfg.contract import seal
def write(path, data, kind=None, name=None):
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if kind:
        data = {{**data, "seal": seal.sign(kind, name, data)}}
    with open(path, "w") as out:
        json.dump(data, out)
if "tick" in mode:
    path = os.path.join(root, "roadmaps", "c.md")
    text = open(path).read()
    open(path, "w").write(text.replace("- [ ]", "- [x]"))
    receipts = os.path.join(root, "state", "receipts", "c.json")
    data = json.load(open(receipts)) if os.path.exists(receipts) else {{"receipts": []}}
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
    for step, text, line in (("1.1", "Write the parser", "true"),
                             ("1.2", "Write the ladder", "test -f ladder.txt"),
                             ("1.3", "Write the report", "test -f report.txt")):
        fields = {{"step": step, "text": sha(text), "command": sha(line), "exit_code": 0,
                   "at": at}}
        data["receipts"].append({{**fields, "seal": seal.sign("receipts", "c", fields)}})
    write(receipts, data)
if "ended" in mode:
    path = os.path.join(root, "state", "runs", key + "-c.json")
    run = json.load(open(path)) if os.path.exists(path) else {{
        "started_at": "2026-01-01T00:00:00Z", "iterations": 0, "last_turn": None,
        "last_reply": None, "repeats": 0, "history": [], "last_engaged_at": None,
        "halted": None}}
    run.pop("seal", None)
    run["ended"] = "complete"
    write(path, run, "runs", key + "-c")
if "distrust" in mode:  # the person's trust store gone while the run works
    os.unlink(os.path.join(os.environ["XDG_STATE_HOME"], "agentcfg", "trust.json"))
if "lease" in mode:
    write(os.path.join(root, "state", "fleet", "c.json"), {{
        "slug": "c", "holder": "me", "step": "9.9", "fence": 1, "ttl": 900,
        "expires": "2099-01-01T00:00:00Z", "coordinate": None}}, "fleet", "c")
    payload = {{"session_id": session, "transcript_path": os.path.join(root, "t.jsonl"),
               "cwd": root, "hook_event_name": "Stop", "stop_hook_active": False}}
    subprocess.run([sys.executable, "-m", "agentcfg", "hook", "stop"],
                   input=json.dumps(payload).encode(), cwd=root, check=False)
"""


def setup(ws: Path, mode: str) -> dict[str, str]:
    write_roadmap(ws, "c", BODY)
    assert run_cli("hooks", "install", "--host", "claude").exit_code == 0
    assert run_cli("roadmap", "trust", "c").exit_code == 0
    folder = ws.parent / "bin"
    folder.mkdir()
    (folder / "mode").write_text(mode)
    fake = folder / "claude"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def starts(ws: Path) -> int:
    return len((ws.parent / "bin" / "starts.log").read_text().splitlines())


def events(ws: Path) -> list[str]:
    return [e["event"] for e in ledger(ws)]


def test_ticks_receipts_and_an_ended_complete_forged_by_the_agent_end_halt_unproven(
    ws: Path,
) -> None:
    env = setup(ws, "tick+ended")
    ran = cli_process(ws, "run", "c", "--host", "claude", "--json", **env)
    assert ran.returncode == EXIT_CODES["halt-unproven"] == 15, ran.stderr
    result = json.loads(ran.stdout)
    assert result["ending"] == "halt-unproven"
    assert result["reproof"]["failed"] == [["1.2", "exit 1"], ["1.3", "exit 1"]]
    assert starts(ws) == 2  # resumed once after the first re-proof reopened the steps
    assert "complete" not in events(ws)
    assert events(ws).count("reproof-reopened") == 2
    assert "agentcfg run: halt-unproven — roadmap `c` (exit 15)" in ran.stderr
    assert "  re-proof 3 steps in " in ran.stderr
    audit = cli_process(ws, "roadmap", "audit", "c")
    assert audit.returncode == 1
    assert "1.2  open      failed the re-proof at the run's end (exit 1)" in audit.stdout


def test_an_ended_complete_with_nothing_closed_never_exits_0(ws: Path) -> None:
    env = setup(ws, "ended")
    ran = cli_process(ws, "run", "c", "--host", "claude", **env)
    assert ran.returncode == 15, ran.stderr
    assert "agentcfg run: halt-unproven — roadmap `c` (exit 15)" in ran.stdout
    assert "complete" not in events(ws)
    reproofs = [e for e in ledger(ws) if e["event"] == "reproof"]
    assert [r["failed"] for r in reproofs] == [
        [["1.1", "open"], ["1.2", "open"], ["1.3", "open"]]
    ] * 2


def test_a_lease_on_no_step_written_in_a_plain_run_does_not_narrow_it_to_nothing(
    ws: Path,
) -> None:
    env = setup(ws, "lease")
    ran = cli_process(ws, "run", "c", "--host", "claude", "--max-restarts", "1", **env)
    assert ran.returncode == EXIT_CODES["halt-restarts"], ran.stderr
    assert "membership-ignored" in events(ws)
    assert "complete" not in events(ws)
    assert "engage" in events(ws)  # the hook carried on the run's own open work


def test_a_run_whose_steps_pass_again_ends_complete_with_the_re_proofs_time(ws: Path) -> None:
    env = setup(ws, "tick+ended")
    (ws / "ladder.txt").write_text("ok\n")
    (ws / "report.txt").write_text("ok\n")
    ran = cli_process(ws, "run", "c", "--host", "claude", **env)
    assert ran.returncode == 0, ran.stderr
    assert "agentcfg run: complete — roadmap `c` (exit 0)" in ran.stdout
    assert "  re-proof 3 steps in " in ran.stdout
    assert cli_process(ws, "roadmap", "audit", "c").returncode == 0


def test_a_run_on_lines_nobody_trusted_is_refused_before_the_host_starts(ws: Path) -> None:
    env = setup(ws, "tick+ended")
    (ws.parent / "xdg" / "agentcfg" / "trust.json").unlink()
    ran = cli_process(ws, "run", "c", "--host", "claude", **env)
    assert ran.returncode == 1
    assert ran.stderr.strip().splitlines() == [
        "agentcfg: error: roadmap `c` has 3 verify lines nobody trusted (step 1.1, 1.2, 1.3): "
        "no agent can close those steps; review and trust them first: agentcfg roadmap trust c"
    ]
    assert not (ws.parent / "bin" / "starts.log").exists()  # the host never started
    assert "run-start" not in events(ws)


def test_a_re_proof_no_agent_can_mend_ends_at_once(ws: Path) -> None:
    env = setup(ws, "tick+ended+distrust")
    ran = cli_process(ws, "run", "c", "--host", "claude", "--json", **env)
    assert ran.returncode == 15, ran.stderr
    result = json.loads(ran.stdout)
    assert result["reproof"]["failed"] == [[s, "not trusted"] for s in ("1.1", "1.2", "1.3")]
    assert starts(ws) == 1  # no host start can make a line trusted: a person's turn
