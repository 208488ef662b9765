"""`agentcfg hook session-start` as a real subprocess fed the SessionStart payload the real Claude
Code 2.1.328 sent after `/compact` (source `compact`): the claimed step comes back as context in
the documented answer, and every other case prints nothing and exits 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.conftest import REPO, hook_env, run_cli

COMPACT = REPO / "tests" / "fixtures" / "claude-code-2.1.328" / "session-start-compact.json"


def payload(root: Path, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(COMPACT.read_text())
    return {**data, "cwd": str(root), **changes}


def start(
    root: Path, data: dict[str, Any] | bytes, host: str = "claude"
) -> subprocess.CompletedProcess[str]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    proc = subprocess.run(
        [sys.executable, "-m", "agentcfg", "hook", "session-start", "--host", host],
        input=raw, capture_output=True, env=hook_env(root), cwd=root, timeout=60, check=False,
    )  # fmt: skip
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


@pytest.fixture
def claimed(ws: Path) -> Path:
    session = json.loads(COMPACT.read_text())["session_id"]
    assert run_cli("sessions", "claim", "demo", "--session", session).exit_code == 0
    return ws


@pytest.mark.parametrize("host", ["claude", "codex", "qwen"])
def test_after_a_compaction_the_claimed_step_comes_back_as_context(
    claimed: Path, host: str, snapshot: SnapshotAssertion
) -> None:
    result = start(claimed, payload(claimed), host)
    assert (result.returncode, result.stderr) == (0, "")
    answer = json.loads(result.stdout)
    assert list(answer) == ["hookSpecificOutput"]
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert output["additionalContext"] == snapshot


def test_the_step_shown_follows_the_roadmap(claimed: Path) -> None:
    first = json.loads(start(claimed, payload(claimed)).stdout)
    assert "**1.2**" in first["hookSpecificOutput"]["additionalContext"]
    assert run_cli("roadmap", "done", "demo", "1.2", "--no-verify").exit_code == 0
    after = json.loads(start(claimed, payload(claimed)).stdout)
    text = after["hookSpecificOutput"]["additionalContext"]
    assert text != first["hookSpecificOutput"]["additionalContext"]
    assert "**1.2**" not in text and "3 of 6 closed" in text


@pytest.mark.parametrize("source", ["startup", "resume", "clear"])
def test_other_starts_get_nothing(claimed: Path, source: str) -> None:
    result = start(claimed, payload(claimed, source=source))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_session_without_a_claim_gets_nothing(ws: Path) -> None:
    result = start(ws, payload(ws))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


@pytest.mark.parametrize(
    "data", [b"", b"not json", b"[]", b'{"session_id": 7}', b"\xff\xfe", b'{"source": "compact"}']
)
def test_anything_unreadable_fails_open(claimed: Path, data: bytes) -> None:
    result = start(claimed, data)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_roadmap_gone_fails_open(claimed: Path) -> None:
    (claimed / "roadmaps" / "demo.md").unlink()
    result = start(claimed, payload(claimed))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_bad_command_line_is_one_line_and_exit_two(ws: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "agentcfg", "hook", "session-start", "--host", "nope"],
        input=b"{}", capture_output=True, env=hook_env(ws), cwd=ws, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.decode().count("\n") == 1


def test_a_fleet_member_is_told_its_leased_step_not_the_first_open_one(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    session = json.loads(COMPACT.read_text())["session_id"]
    claim = ("sessions", "claim", "demo", "--session", session, "--step", "1.3")
    assert run_cli(*claim).exit_code == 0
    text = json.loads(start(ws, payload(ws)).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "**1.3**" in text and "**1.2**" not in text
    assert text == snapshot
    assert run_cli("roadmap", "done", "demo", "1.3", "--no-verify").exit_code == 0
    after = json.loads(start(ws, payload(ws)).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "**1.2**" not in after and "step 1.3 you lease is closed" in after
