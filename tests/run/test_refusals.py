"""What `agentcfg run` tells when a run cannot progress for a reason the person can fix: the
warning before the start (approvals nobody can give, an allowlist the host will ignore), the
ending's refusals, failures and next command, the hook's lines in an unattended run; and a
claim whose driver is gone taken back without --force, a live one kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims, state
from agentcfg.core.ladder import Caps
from agentcfg.core.texts import NOTES, note
from agentcfg.hosts import claude, codex, copilot, gemini, qwen, registry
from agentcfg.paths import DRIVERS
from agentcfg.run import driver
from agentcfg.run.model import EXIT_CODES
from agentcfg.workspace import Workspace
from tests.conftest import run_cli

NOW = 1_790_000_000.0


# --- before the start: what will keep the agent's commands from running ---


def _settings(path: Path, document: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))


def test_each_hosts_warning_before_a_start_that_cannot_run_commands(
    tmp_path: Path, snapshot: SnapshotAssertion
) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    told = {
        "claude": claude.asks(root, home, {}, ()),
        "codex": codex.asks(root, home, {"CODEX_HOME": str(tmp_path / "codex")}, ()),
        "gemini": gemini.asks(root, home, {}, ()),
        "qwen": qwen.asks(root, home, {}, ()),
        "copilot": copilot.asks(root, home, {}, ()),
    }
    assert all(len(lines) == 1 for lines in told.values()), told
    text = "\n".join(f"{name}: {lines[0]}" for name, lines in told.items())
    assert text.replace(str(tmp_path), "/tmp") == snapshot


@pytest.mark.parametrize(
    ("host", "extra"),
    [
        (claude, ("--allowedTools", "Bash")),
        (claude, ("--allowedTools=Bash(agentcfg:*)",)),
        (claude, ("--permission-mode", "bypassPermissions")),
        (codex, ("--full-auto",)),
        (codex, ("--sandbox", "workspace-write")),
        (codex, ("-c", 'sandbox_mode="workspace-write"')),
        (gemini, ("--approval-mode", "yolo")),
        (qwen, ("--yolo",)),
        (copilot, ("--allow-all-tools",)),
    ],
)
def test_the_persons_own_arguments_that_allow_commands_silence_the_warning(
    tmp_path: Path, host: object, extra: tuple[str, ...]
) -> None:
    found = host.asks(tmp_path, tmp_path, {"CODEX_HOME": str(tmp_path)}, extra)  # type: ignore[attr-defined]
    assert found == []


def test_claude_code_allowlists_count_where_the_host_reads_them(
    tmp_path: Path, snapshot: SnapshotAssertion
) -> None:
    root, home = tmp_path / "project", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    _settings(root / ".claude" / "settings.json", {"permissions": {"allow": ["Bash(agentcfg:*)"]}})
    ignored = claude.asks(root, home, {}, ())
    assert [line.replace(str(tmp_path), "/tmp") for line in ignored] == snapshot
    # trusted, as the line says, the project's allowlist is read
    _settings(home / ".claude.json", {"projects": {str(root): {"hasTrustDialogAccepted": True}}})
    assert claude.asks(root, home, {}, ()) == []
    # the user's own allowlist is read in any folder
    (home / ".claude.json").unlink()
    _settings(home / ".claude" / "settings.json", {"permissions": {"allow": ["Bash"]}})
    assert claude.asks(root, home, {}, ()) == []
    # an allowlist of other tools lets no command run
    _settings(home / ".claude" / "settings.json", {"permissions": {"allow": ["Read"]}})
    (root / ".claude" / "settings.json").unlink()
    assert len(claude.asks(root, home, {}, ())) == 1


def test_every_runnable_host_says_how_to_allow_commands() -> None:
    for name in driver.runnable_hosts():
        assert registry.adapter(name).ALLOW.strip(), name


# --- the ending ---


def test_the_endings_refusals_failures_and_next_command(snapshot: SnapshotAssertion) -> None:
    told = driver.Told(
        denied=("agentcfg roadmap done demo 1.1", "agentcfg roadmap done demo 1.2"),
        allow=claude.ALLOW,
        failed=("make test", "pytest -q tests/test_x.py"),
        ignored=("Ignoring 1 permissions.allow entry from .claude/settings.json: x",),
        next="allow the agent's commands, then: agentcfg run demo --host claude",
    )
    assert "\n".join(told.lines("Claude Code")) == snapshot(name="lines")
    assert told.to_json() == snapshot(name="json")
    assert driver.Told().to_json() == {
        "permissions": None, "last_failed": [], "ignored_settings": [], "next": None,
    }  # fmt: skip


def test_a_refused_command_is_shown_escaped() -> None:
    told = driver.Told(denied=("echo \x1b[2Jgone",), allow="x")
    (line,) = told.lines("Claude Code")
    assert "\x1b" not in line


def test_every_ending_with_work_left_names_what_the_person_runs_next(
    snapshot: SnapshotAssertion,
) -> None:
    shown = {
        ending: (driver.NEXT.get(ending) or driver.AGAIN[ending]).format(
            slug="demo", again="agentcfg run demo --host claude"
        )
        for ending in EXIT_CODES
        if ending in driver.NEXT or ending in driver.AGAIN
    }
    assert set(EXIT_CODES) - set(shown) == {
        "complete", "blocked", "handback-question", "handback-background", "released",
    }  # fmt: skip
    assert "\n".join(f"{k}: {v}" for k, v in shown.items()) == snapshot


def test_the_hooks_lines_in_an_unattended_run_name_the_command_not_the_agent(
    snapshot: SnapshotAssertion,
) -> None:
    caps = Caps(max_iterations=25, wall_clock=4 * 3600, stall_window=3)
    lines = [note(event, "demo", 2, caps, "a problem", "claude") for event in NOTES]
    assert not any("have the agent" in line.lower() for line in lines)
    assert not any("sessions claim" in line for line in lines)
    assert "\n".join(lines) == snapshot
    # in a person's own session the lines are as they were
    assert "have the agent claim it again" in note("halt-stall", "demo", 2, caps)


# --- a claim whose driver is gone ---


def _claimed_by_driver(ws: Path, pid: int | None, now: float = NOW) -> claims.Claim:
    workspace = Workspace(ws)
    made = claims.claim(workspace, "s-old", "demo", now=now).claim
    if pid is not None:
        started = driver._started(pid)
        state.write_json(
            ws / "state" / DRIVERS / f"{made.key}.json", {"pid": pid, "started": started}
        )
    return made


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_claim_whose_driver_is_gone_is_taken_back_without_force(ws: Path) -> None:
    _claimed_by_driver(ws, _dead_pid())
    said: list[str] = []
    assert driver._take_back(Workspace(ws), "demo", NOW + 60, said.append)
    assert said == [
        f"agentcfg run: taking back roadmap `demo` from session s-old: the `agentcfg run` that "
        f"held it (pid {said[0].split('pid ')[1].split(')')[0]}) is gone"
    ]


def test_a_claim_whose_driver_runs_still_needs_force(ws: Path) -> None:
    _claimed_by_driver(ws, os.getpid())
    assert not driver._take_back(Workspace(ws), "demo", NOW + 60, print)


def test_a_claim_no_driver_made_still_needs_force(ws: Path) -> None:
    _claimed_by_driver(ws, None)  # an agent's own session, say
    assert not driver._take_back(Workspace(ws), "demo", NOW + 60, print)


def test_a_pid_given_to_another_process_is_not_the_driver(ws: Path) -> None:
    made = _claimed_by_driver(ws, os.getpid())
    record = ws / "state" / DRIVERS / f"{made.key}.json"
    state.write_json(record, {"pid": os.getpid(), "started": "1"})  # started at another moment
    assert driver._take_back(Workspace(ws), "demo", NOW + 60, print)


def test_the_persons_run_refused_by_a_live_claim_names_force(ws: Path, tmp_path: Path) -> None:
    assert run_cli("roadmap", "trust", "demo").exit_code == 0
    _claimed_by_driver(ws, os.getpid(), time.time())
    assert run_cli("hooks", "install", "--host", "claude").exit_code == 0
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "claude").write_text("#!/bin/sh\nexit 0\n")
    (folder / "claude").chmod(0o755)
    env = {"PATH": f"{folder}:{os.environ['PATH']}"}
    result = run_cli("run", "demo", "--host", "claude", env=env)
    assert result.exit_code == 1
    assert "claimed by session s-old" in result.output and "--force" in result.output


# --- the host's records read as they come ---


def test_each_whole_line_of_the_hosts_output_is_heard_once_however_it_is_cut(
    tmp_path: Path,
) -> None:
    from agentcfg.hosts.stream import Refusal

    denied = (
        Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328" / "permission-denied.jsonl"
    )
    data = denied.read_bytes().rstrip(b"\n")  # the last line has no newline: heard at the end
    read, write = os.pipe()
    with os.fdopen(read, "rb") as out:
        tail = driver._Tail(out, claude.hear)
        with os.fdopen(write, "wb") as into:
            for n in range(0, len(data), 7):  # cut anywhere, a line across many chunks
                into.write(data[n : n + 7])
                into.flush()
        tail.join(10)
    assert [type(e).__name__ for e in tail.heard] == [
        "ToolCall", "Tokens", "Refusal", "ToolResult", "Tokens", "Result",
    ]  # fmt: skip
    assert next(e for e in tail.heard if isinstance(e, Refusal)).tool == "Bash"
    assert tail.text() == data.decode()
