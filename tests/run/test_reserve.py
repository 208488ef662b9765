"""`agentcfg run --reserve` and `--host a,b` through the driver, against fake host programs and
a clock that does not wait: the reserve asks the run to end its turn, pauses until the window's
reset and resumes the same session; a host paused at its limit hands the run to the next listed
host in a new session; the refusals before anything starts; the settings; what `report` shows.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims, state
from agentcfg.config import load_config
from agentcfg.core import report as reports
from agentcfg.core.ladder import RunState
from agentcfg.core.times import iso
from agentcfg.run import driver
from agentcfg.run.model import Policy
from agentcfg.workspace import Workspace
from tests.conftest import run_cli

NOW = 1_790_024_000.0  # 2026-09-21T20:53:20Z
RESET = NOW + 3600


class Clock:
    """Time that moves only when the driver waits."""

    def __init__(self) -> None:
        self.moment = NOW

    def now(self) -> float:
        return self.moment

    def sleep(self, seconds: float) -> None:
        self.moment += seconds


def program(folder: Path, name: str, body: str) -> Path:
    """A fake host program: logs each start's arguments (one JSON line in `<name>.log`), then
    runs `body` (Python) with `start`, the number of this start from 1."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\nimport json, pathlib, sys, time\n"
        "log = pathlib.Path(__file__).with_suffix('.log')\n"
        "with log.open('a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "start = len(log.read_text().splitlines())\n" + body
    )
    path.chmod(0o755)
    return path


def host_env(folder: Path) -> dict[str, str]:
    """The fake hosts' folder as PATH, with the person's store the test's (their trust)."""
    return {"PATH": str(folder), **{k: os.environ[k] for k in ("HOME", "XDG_STATE_HOME")}}


def starts(folder: Path, name: str) -> list[list[str]]:
    log = folder / f"{name}.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def ledger(root: Path) -> list[dict[str, Any]]:
    path = root / "state" / "run-continuation.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


# a subscriber's Claude Code: the first start's reply shows the 5-hour window 90 % used, then
# it waits for the driver's ask to end its turn (as the hook's allowed stop ends a real start)
WINDOWS = f"""
used = 0.9 if start == 1 else 0.1
info = {{"status": "allowed", "unifiedWindows": {{"five_hour": {{"utilization": used,
        "resetsAt": {RESET}}}, "seven_day": {{"utilization": 0.3, "resetsAt": {RESET + 86400}}}}}}}
print(json.dumps({{"type": "rate_limit_event", "rate_limit_info": info}}), flush=True)
asked = pathlib.Path("state/yields")
deadline = time.time() + 20
while used > 0.5 and not list(asked.glob("*.json")) and time.time() < deadline:
    time.sleep(0.02)
pathlib.Path(__file__).with_name(f"asked-{{start}}").write_text(
    str(sorted(p.name for p in asked.glob("*.json"))) if asked.exists() else "[]")
print(json.dumps({{"type": "result", "result": "Stopping here.", "is_error": False}}))
"""


def test_the_reserve_ends_the_turn_pauses_until_the_reset_and_resumes_the_session(
    ws: Path, tmp_path: Path
) -> None:
    _installed("claude")
    folder = tmp_path / "bin"
    program(folder, "claude", WINDOWS)
    env = host_env(folder)
    workspace = Workspace(ws)
    policy = Policy(max_restarts=1, reserve=30.0, quota_margin=120.0)
    request = driver.Request("demo", "claude", policy, ("--allowedTools", "Bash"), False)
    ready = driver.prepare(workspace, request, env, tmp_path / "home")
    lines: list[str] = []
    clock = Clock()
    result = driver.drive(workspace, request, ready, env, clock, lines.append)

    first, second = starts(folder, "claude")
    session = result.session
    assert session is not None
    key = claims.session_key(session)
    # the host was asked to show its windows; the run, to end its turn; the resume, the same
    assert first[-5:] == ["--allowedTools", "Bash", "--output-format", "stream-json", "--verbose"]
    assert (folder / "asked-1").read_text() == str([f"{key}.json"])
    assert (folder / "asked-2").read_text() == "[]"  # the ask is gone before the next start
    assert second[second.index("--resume") + 1] == session
    events = ledger(ws)
    events = [e for e in events if e["event"] != "trusted"]
    names = [e["event"] for e in events]
    assert names[:4] == ["claimed", "run-start", "paused-quota", "run-resume"], names
    paused, resumed = events[2], events[3]
    assert (paused["window"], paused["utilization"], paused["reset_at"]) == (
        "five_hour", 0.9, iso(RESET)
    )  # fmt: skip
    assert paused["resume_at"] == iso(RESET + 120)
    assert (resumed["reason"], resumed["same_session"]) == ("quota", True)
    assert resumed["at"] >= iso(RESET + 120)  # no start before the reset and its margin
    assert result.ending == "halt-restarts"  # the fake host never closes a step
    assert any(line.startswith("agentcfg run: paused to keep the reserve") for line in lines)


LIMITED = f"print('Claude AI usage limit reached|{int(NOW + 5 * 3600)}')\nsys.exit(1)\n"


def test_a_host_at_its_limit_hands_the_run_to_the_next_listed_host(
    ws: Path, tmp_path: Path
) -> None:
    _installed("claude", "gemini")
    folder = tmp_path / "bin"
    program(folder, "claude", LIMITED)
    program(folder, "gemini", "print('Working on it.')\n")
    env = {**host_env(folder), "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    request = driver.Request(
        "demo", "claude", Policy(max_restarts=1), ("-c",), False,
        others=("gemini",), others_args=(("-y", "-m", "pro"),),
    )  # fmt: skip
    ready = driver.prepare(Workspace(ws), request, env, tmp_path / "home")
    lines: list[str] = []
    result = driver.drive(Workspace(ws), request, ready, env, Clock(), lines.append)

    (claude_start,) = starts(folder, "claude")
    (gemini_start,) = starts(folder, "gemini")
    assert "-c" in claude_start and gemini_start[-3:] == ["-y", "-m", "pro"]
    prompt = gemini_start[gemini_start.index("-p") + 1]
    assert "this new session carries on the run on roadmap `demo`" in prompt
    assert "--session-id" in gemini_start and "--resume" not in gemini_start
    events = ledger(ws)
    names = [e["event"] for e in events]
    assert "paused-usage-limit" not in names  # nobody waited: another host was free
    moved = next(e for e in events if e["event"] == "run-failover")
    assert (moved["from"], moved["to"], moved["reason"]) == (
        "claude",
        "gemini",
        "paused-usage-limit",
    )
    assert moved["paused_until"] == iso(NOW + 5 * 3600)
    resumed = next(e for e in events if e["event"] == "run-resume")
    assert (resumed["host"], resumed["reason"], resumed["same_session"]) == (
        "gemini", "failover", False
    )  # fmt: skip
    assert resumed["session"] == result.session and result.host == "gemini"
    assert result.failovers == 1 and result.to_json()["failovers"] == 1
    assert any(line.endswith("gemini carries the run on") for line in lines), lines


def test_a_failover_carries_the_runs_counts_into_the_new_session(ws: Path) -> None:
    workspace = Workspace(ws)
    held = claims.claim(workspace, "s-1", "demo", now=NOW).claim
    path = claims.run_path(workspace, held.key, "demo")
    claims.write_run(path, RunState(started_at=NOW, iterations=3, tokens=500))
    before = claims.read_run(workspace, held)
    taken = claims.claim(workspace, "s-2", "demo", now=NOW + 60, force=True).claim
    session = driver._Session("s-2", named=True, carried=before)
    driver._carry(workspace, session)
    carried = claims.read_run(workspace, taken)
    assert carried is not None and session.carried is None
    assert (carried.iterations, carried.tokens, carried.started_at) == (3, 500, NOW)
    driver._carry(workspace, session)  # once only
    assert claims.read_run(workspace, taken) == carried


# --- refused before anything starts ---


def _installed(*hosts: str) -> None:
    """Our hook for each host, and the demo roadmap's verify lines trusted as a person does."""
    for host in hosts:
        assert run_cli("hooks", "install", "--host", host).exit_code == 0
    assert run_cli("roadmap", "trust", "demo").exit_code == 0


@pytest.mark.parametrize(
    ("hosts", "installed", "programs", "message"),
    [
        ("claude,gemini", ("claude",), ("claude", "gemini"),
         "the stop hook is not installed for Gemini CLI: run `agentcfg hooks install --host gemini` first"),
        ("claude,gemini", ("claude", "gemini"), ("claude",),
         "cannot find Gemini CLI's program `gemini` on PATH: install it first"),
        ("claude,claude", ("claude",), ("claude",), "--host claude,claude names a host twice"),
        ("claude,", ("claude",), ("claude",),
         "--host 'claude,' is not a host or a list of hosts like claude,codex"),
        ("claude,vim", ("claude",), ("claude",),
         "unknown host 'vim' (one of: claude, codex, copilot, cursor, gemini, opencode, qwen)"),
    ],
)  # fmt: skip
def test_a_listed_host_that_cannot_run_is_refused_in_one_line(
    ws: Path, tmp_path: Path, hosts: str, installed: tuple[str, ...],
    programs: tuple[str, ...], message: str,
) -> None:  # fmt: skip
    _installed(*installed)
    for name in programs:
        program(tmp_path / "bin", name, "")
    result = run_cli("run", "demo", "--host", hosts, env={"PATH": str(tmp_path / "bin")})
    assert (result.exit_code, result.output) == (1, f"agentcfg: error: {message}\n")
    assert not any(starts(tmp_path / "bin", name) for name in programs)


@pytest.mark.parametrize("reserve", ["-5", "101", "lots", "30%%"])
def test_a_reserve_that_is_not_a_percent_is_refused(ws: Path, reserve: str) -> None:
    result = run_cli("run", "demo", "--host", "claude", "--reserve", reserve)
    assert (result.exit_code, result.output) == (
        1, f"agentcfg: error: --reserve {reserve!r} is not a percent from 0 to 100, e.g. 30\n"
    )  # fmt: skip


def test_several_hosts_go_without_a_fleet(ws: Path) -> None:
    result = run_cli("run", "demo", "--host", "claude,codex", "--agents", "2")
    assert (
        result.exit_code == 2 and "--host with several hosts goes without --agents" in result.output
    )


def test_a_reserve_on_a_host_that_shows_no_windows_is_said_before_it_starts(
    ws: Path, tmp_path: Path
) -> None:
    _installed("gemini")
    program(tmp_path / "bin", "gemini", "")
    (ws / "agentcfg.yaml").write_text("run:\n  reserve: 25\n")
    env = {**host_env(tmp_path / "bin"), "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    result = run_cli("run", "demo", "--host", "gemini", "--max-restarts", "1", env=env)
    shown = result.output.splitlines()
    assert (
        "agentcfg run: Gemini CLI shows no usage windows: the reserve is not kept while it runs"
    ) in shown, result.output
    assert starts(tmp_path / "bin", "gemini")  # said, and the run went on


# --- settings ---


def test_the_run_settings_of_agentcfg_yaml(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text(
        "run:\n  reserve: 30%\n  reserve_margin: 5m\n"
        "  args:\n    codex: [--skip-git-repo-check]\n    claude: [--allowedTools, Bash]\n"
    )
    config = load_config(Workspace(ws), {})
    assert (config.reserve, config.reserve_margin, config.problems) == (30.0, 300.0, ())
    assert dict(config.host_args) == {
        "codex": ("--skip-git-repo-check",), "claude": ("--allowedTools", "Bash")
    }  # fmt: skip


def test_bad_run_settings_are_told_and_left_out(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text(
        "run:\n  reserve: 130\n  reserve_margin: soon\n  args: {codex: --yolo}\n  hosts: [a]\n"
    )
    config = load_config(Workspace(ws), {})
    assert (config.reserve, config.reserve_margin, config.host_args) == (None, None, ())
    assert config.problems == (
        "run.reserve: invalid value 130; a percent from 0 to 100",
        "run.reserve_margin: invalid value 'soon'; a duration like 2m",
        "run.args.codex: expected a list of arguments, not '--yolo'",
        "run.hosts: unknown setting",
    )


# --- what report and watch show ---


def _paused_run(ws: Path) -> str:
    workspace = Workspace(ws)
    key = claims.claim(workspace, "s-1", "demo", now=NOW).claim.key
    for event in (
        state.event("run-start", NOW, key, "demo", host="claude"),
        state.event("paused-quota", NOW + 60, key, "demo", resume_at=iso(RESET + 120),
                    window="five_hour", utilization=0.7213, reset_at=iso(RESET)),
        state.event("run-failover", NOW + 61, key, "demo", **{"from": "claude"}, to="codex",
                    reason="paused-quota", paused_until=iso(RESET + 120)),
    ):  # fmt: skip
        state.append_ledger(workspace.state, event)
    return key


def test_report_lists_the_pauses_for_the_reserve_and_the_failovers(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    key = _paused_run(ws)
    data = reports.build(state.ledger_lines(Workspace(ws).state), now=NOW + 120).to_json()
    (row,) = data["rows"]
    assert row["run"] == key
    assert row["quota_pauses"] == [{
        "at": iso(NOW + 60), "window": "five_hour", "utilization": 0.7213,
        "reset_at": iso(RESET), "resume_at": iso(RESET + 120),
    }]  # fmt: skip
    assert row["failovers"] == [
        {"at": iso(NOW + 61), "from": "claude", "to": "codex", "reason": "paused-quota"}
    ]
    assert reports.pause_lines(row) == snapshot


def test_watch_counts_down_to_the_end_of_a_pause_for_the_reserve(ws: Path) -> None:
    from agentcfg import watch

    workspace = Workspace(ws)
    key = claims.claim(workspace, "s-1", "demo", now=NOW).claim.key
    state.append_ledger(workspace.state, state.event(
        "paused-quota", NOW, key, "demo", resume_at=iso(NOW + 5400), window="five_hour",
        utilization=0.8, reset_at=iso(NOW + 5280),
    ))  # fmt: skip
    frame = watch.frame(workspace, {}, NOW + 600, width=160)
    assert "paused-quota" in frame and "resumes in 1h20m" in frame
