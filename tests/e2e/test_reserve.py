"""`agentcfg run --reserve` and `--host a,b` with the real Claude Code and Codex binaries
against scripted models: a subscriber's run pauses at a turn end before its 5-hour window passes
80 %, no request reaches the model while it waits, and it resumes after the window's reset to
complete (Claude Code's windows from its stream-json, Codex's from its session file); a run
whose Claude Code is limited for hours is completed by Codex.

Resets here are seconds away, not hours: the scripted server announces them, and the margin the
driver waits past a reset is set short in agentcfg.yaml (`run.reserve_margin`).
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fake_model import serve
from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg, binary, project
from tests.e2e.limits import Limit, Windows
from tests.e2e.test_codex import CONFIG
from tests.e2e.test_run import EXTRA, LONG_ROADMAP, RunScript


def at(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["at"].replace("Z", "+00:00")).timestamp()


def subscriber(tmp_path: Path, config: str) -> tuple[Path, dict[str, str]]:
    """A project on the five-step roadmap with Claude Code's hook, signed in as a subscriber
    (an OAuth token: the host then prints its usage windows), and `config` as agentcfg.yaml."""
    root, _home, env = project(tmp_path)
    (root / "roadmaps" / f"{SLUG}.md").write_text(LONG_ROADMAP)
    agentcfg(root, env, "roadmap", "trust", SLUG)
    agentcfg(root, env, "hooks", "install", "--host", "claude")
    (root / "agentcfg.yaml").write_text(config)
    env = {
        **env,
        "PATH": f"{binary('claude-2.1.328', 'claude').parent}:{env['PATH']}",
        "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return root, env


def run(root: Path, env: dict[str, str], *words: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENTCFG, "run", SLUG, "--json", *words],
        cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def ledger(root: Path) -> list[dict[str, Any]]:
    lines = (root / "state" / "run-continuation.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def with_codex(tmp_path: Path, root: Path, env: dict[str, str]) -> dict[str, str]:
    """The project's environment with Codex on PATH, its hook trusted, its home scripted."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG)
    env = {
        **env,
        "CODEX_HOME": str(codex_home),
        "FAKE_API_KEY": "test-local",
        "PATH": f"{binary('codex-0.169.0', 'codex').parent}:{env['PATH']}",
    }
    agentcfg(root, env, "hooks", "install", "--host", "codex", "--trust")
    return env


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_a_reserve_of_30_pauses_before_the_window_passes_80_then_completes(
    tmp_path: Path, host: str
) -> None:
    root, env = subscriber(tmp_path, "run:\n  reserve: 30\n  reserve_margin: 1s\n")
    if host == "codex":
        env = with_codex(tmp_path, root, env)
    # each model request uses 5 % of the 5-hour window, from 50 %: 70 % is reached within the
    # second step; the window resets 30 s after the first request
    windows = Windows(start=0.5, step=0.05, reset_in=30)
    server = serve(RunScript(), host, None, windows)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    extra = [word.replace("{url}", url) for word in EXTRA[host]]
    try:
        proc = run(root, {**env, "ANTHROPIC_BASE_URL": url}, "--host", host, "--", *extra)
    finally:
        server.shutdown()
    failure = f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, failure
    assert json.loads(proc.stdout)["ending"] == "complete", failure
    assert (root / "roadmaps" / f"{SLUG}.md").read_text().count("- [x]") == 5

    events = ledger(root)
    names = [e["event"] for e in events]
    assert names.count("paused-quota") == 1, names
    yielded = next(e for e in events if e["event"] == "yielded")
    paused = next(e for e in events if e["event"] == "paused-quota")
    resumed = next(e for e in events if e["event"] == "run-resume")
    assert names.index("yielded") < names.index("paused-quota") < names.index("run-resume")
    assert (resumed["reason"], resumed["same_session"]) == ("quota", True)
    assert paused["window"] == "five_hour" and 0.70 <= paused["utilization"] <= 0.80
    assert paused["reset_at"] is not None and at(resumed) >= windows.reset_at

    # the pause came at a turn end, before the window passed 80 % (the ledger tells whole
    # seconds: a request in the pause's own second came before it, none comes until the reset)
    before = [windows.used(t) for t in windows.requests if t < at(paused) + 1]
    assert before and max(before) <= 0.80, (windows.requests, [(at(e), e["event"]) for e in events])
    # no request reached the model from the turn end the run yielded at to the resume (the
    # ledger tells whole seconds: from the second after the yield's); and every request before
    # the resume is one whose reading the driver held when it paused: none came after it
    assert not [t for t in windows.requests if at(yielded) + 1 <= t < at(resumed)], (
        windows.requests,
        [(at(e), e["event"]) for e in events],
    )
    shown = round(windows.start + windows.step * sum(t < at(resumed) for t in windows.requests), 4)
    assert paused["utilization"] == shown, (paused, windows.requests)
    assert [t for t in windows.requests if t >= at(resumed)]  # the rest of the work came after
    assert "paused to keep the reserve: the 5-hour window is" in proc.stderr

    report = subprocess.run(
        [AGENTCFG, "report"], cwd=root, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "paused for the reserve: 5-hour window" in report, report


def test_a_run_on_claude_and_codex_completes_while_claude_is_limited_for_hours(
    tmp_path: Path,
) -> None:
    root, env = subscriber(tmp_path, "")
    env = with_codex(tmp_path, root, env)
    limit = Limit(seconds=24 * 3600, reset_in=5 * 3600)  # every request for a day: 5 h away
    claude_script, codex_script = RunScript(), RunScript()
    claude_model = serve(claude_script, "claude", limit)
    codex_model = serve(codex_script, "codex")
    claude_url = f"http://127.0.0.1:{claude_model.server_address[1]}"
    codex_url = f"http://127.0.0.1:{codex_model.server_address[1]}"
    codex_args = [word.replace("{url}", codex_url) for word in EXTRA["codex"]]
    (root / "agentcfg.yaml").write_text(json.dumps({"run": {"args": {"codex": codex_args}}}))
    try:
        proc = run(
            root, {**env, "ANTHROPIC_BASE_URL": claude_url}, "--host", "claude,codex",
            "--", *EXTRA["claude"],
        )  # fmt: skip
    finally:
        claude_model.shutdown()
        codex_model.shutdown()
    failure = f"exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, failure
    ending = json.loads(proc.stdout)
    assert (ending["ending"], ending["host"]) == ("complete", "codex"), failure
    assert (root / "roadmaps" / f"{SLUG}.md").read_text().count("- [x]") == 5
    assert limit.refused and not claude_script.prompts  # Claude Code's model answered nothing

    events = ledger(root)
    names = [e["event"] for e in events]
    moved = next(e for e in events if e["event"] == "run-failover")
    assert (moved["from"], moved["to"], moved["reason"]) == (
        "claude", "codex", "paused-usage-limit"
    )  # fmt: skip
    resumed = next(e for e in events if e["event"] == "run-resume")
    assert (resumed["host"], resumed["reason"], resumed["same_session"]) == (
        "codex", "failover", False
    )  # fmt: skip
    assert names.index("run-failover") < names.index("run-resume") < names.index("complete")
    # the new session was told where the run stands: the relay note opened it
    assert any("carries on the run on roadmap `e2e`" in p for p in codex_script.prompts)
    assert "codex carries the run on" in proc.stderr, failure
