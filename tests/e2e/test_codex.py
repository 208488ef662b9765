"""The real Codex CLI, headless, against a scripted model: `hooks install --trust` writes the hook
and both trusts Codex needs into $CODEX_HOME, so Codex runs the hook with no bypass; the claim the
agent makes in its shell tool binds through CODEX_SESSION_ID.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentcfg.claims import session_key
from tests.e2e.harness import Run, agentcfg, assert_complete, assert_stall, binary, drive, project

CONFIG = """model = "m"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
supports_websockets = false
"""


def codex_project(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """(project root, home, CODEX_HOME holding CONFIG, environment pointing at it)."""
    root, home, env = project(tmp_path)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    return root, home, codex_home, {**env, "CODEX_HOME": str(codex_home)}


def exec_codex(root: Path, home: Path, env: dict[str, str], idle: bool) -> Run:
    """One headless `codex exec` over the e2e roadmap against the scripted model."""
    command = [
        str(binary("codex-0.169.0", "codex")), "exec", "--skip-git-repo-check", "--json",
        "-c", 'model_providers.fake.base_url="{url}/v1"',
        "Work through roadmaps/e2e.md.",
    ]  # fmt: skip
    run = drive("codex", root, home, {**env, "FAKE_API_KEY": "test-local"}, command, idle)
    assert run.proc.returncode == 0, run.failure()
    return run


def run_codex(tmp_path: Path, idle: bool) -> Run:
    root, home, codex_home, env = codex_project(tmp_path)
    agentcfg(root, env, "hooks", "install", "--host", "codex", "--trust")
    assert (codex_home / "config.toml").read_text().startswith(CONFIG)  # kept as it was
    findings = json.loads(agentcfg(root, env, "doctor", "--json"))
    assert [f for f in findings if f["subject"] == "codex" and f["level"] != "ok"] == []
    return exec_codex(root, home, env, idle)


def session(run: Run, tmp_path: Path) -> str:
    rollouts = list((tmp_path / "codex-home" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert len(rollouts) == 1, rollouts
    return session_key(json.loads(rollouts[0].read_text().splitlines()[0])["payload"]["id"])


def test_a_run_that_completes(tmp_path: Path) -> None:
    run = run_codex(tmp_path, idle=False)
    assert_complete(run, session(run, tmp_path))
    assert all("<hook_prompt" in t for t in run.script.continuations())


def test_a_run_that_never_progresses_halts_on_stall(tmp_path: Path) -> None:
    run = run_codex(tmp_path, idle=True)
    assert_stall(run, session(run, tmp_path))
    assert len(run.script.continuations()) == 3
