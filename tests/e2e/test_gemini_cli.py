"""The real Gemini CLI, headless, against a scripted model: the AfterAgent hook that `hooks install`
writes fires in a trusted folder, answers with Gemini's JSON decision, and the claim the agent
makes in its shell tool (which sees no session id) binds through the token it prints.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentcfg.claims import session_key
from tests.e2e.harness import Run, agentcfg, assert_complete, assert_stall, binary, drive, project


def run_gemini(tmp_path: Path, idle: bool) -> Run:
    gemini = binary("gemini-0.61.0", "gemini")
    root, home, env = project(tmp_path)
    settings = home / ".gemini"
    settings.mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (settings / "settings.json").write_text(json.dumps(auth))
    (settings / "trustedFolders.json").write_text(json.dumps({str(root): "TRUST_FOLDER"}))
    agentcfg(root, env, "hooks", "install", "--host", "gemini")
    findings = json.loads(agentcfg(root, env, "doctor", "--json"))
    assert [f for f in findings if f["subject"] == "gemini" and f["level"] != "ok"] == []
    env = {**env, "GEMINI_API_KEY": "test-local", "GOOGLE_GEMINI_BASE_URL": "{url}"}
    prompt = "Work through roadmaps/e2e.md."
    command = [str(gemini), "-p", prompt, "--approval-mode", "yolo", "-m", "gemini-2.5-pro"]
    run = drive("gemini", root, home, env, command, idle)
    assert run.proc.returncode == 0, run.failure()
    assert "failed for event AfterAgent" not in run.proc.stderr, run.proc.stderr[-2000:]
    return run


def session(run: Run) -> str:
    chats = list((run.home / ".gemini" / "tmp").glob("*/chats/session-*.json*"))
    assert len(chats) == 1, chats
    return session_key(json.loads(chats[0].read_text().splitlines()[0])["sessionId"])


def test_a_run_that_completes(tmp_path: Path) -> None:
    run = run_gemini(tmp_path, idle=False)
    assert_complete(run, session(run))
    adopted = [e for e in run.ledger() if e["event"] == "claimed"]
    assert len(adopted[0]["pending"]) == 32  # bound through the printed token, kept as a digest


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    run = run_gemini(tmp_path, idle=True)
    assert_stall(run, session(run))
    assert len(run.script.continuations()) == 3
