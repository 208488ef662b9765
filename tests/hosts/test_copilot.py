"""Copilot CLI: payloads of both shapes and the events file captured from the real Copilot CLI
1.0.102, its answer on stdout, and its hook files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from agentcfg import install
from agentcfg.hosts import copilot
from agentcfg.hosts.registry import detect
from tests.conftest import fire, run_cli
from tests.hosts.shared import FIXTURES, labelled

COPILOT = FIXTURES / "copilot-cli-1.0.102"


@pytest.mark.parametrize("shape", ["native", "claude-format"])
def test_copilot_payloads_of_both_shapes(tmp_path: Path, shape: str) -> None:
    (payload,) = labelled(COPILOT / f"copilot-hook-payloads-{shape}.json", "agentStop")
    assert detect(payload).NAME == "copilot"
    events = tmp_path / "events.jsonl"
    shutil.copy(COPILOT / "events.jsonl", events)
    payload = {
        **payload,
        ("transcriptPath" if shape == "native" else "transcript_path"): str(events),
    }
    event = copilot.to_event(payload)
    assert event.session_id == payload.get("sessionId", payload.get("session_id"))
    assert event.turn_id == "prompt-5d2a4b2b-bc3d-42b2-8337-7856b3041c9e"  # the person's prompt
    assert event.last_assistant_message == "That step is done."
    assert not event.interrupted and event.transcript_path == str(events)


def test_copilot_transcript_read_at_each_point_of_a_run(tmp_path: Path) -> None:
    lines = (COPILOT / "events.jsonl").read_text().splitlines(keepends=True)
    types = [json.loads(line)["type"] for line in lines]
    path = tmp_path / "events.jsonl"
    continuation = next(
        i
        for i, line in enumerate(lines)
        if '"user.message"' in line and "run-continuation:" in line
    )
    path.write_text("".join(lines[: continuation + 1]))  # our text came back, no reply yet
    assert copilot.read_events(str(path)) == ("prompt-5d2a4b2b-bc3d-42b2-8337-7856b3041c9e", "")
    path.write_text("".join(lines[: types.index("user.message") + 1]))
    assert copilot.read_events(str(path)) == ("prompt-5d2a4b2b-bc3d-42b2-8337-7856b3041c9e", "")
    path.write_text("".join(line for line in lines if '"user.message"' not in line))
    assert copilot.read_events(str(path)) == ("", "That step is done.")  # no prompt in the tail
    assert copilot.read_events(str(tmp_path / "absent.jsonl")) == ("", None)


def test_copilot_blocks_with_json_on_stdout(ws: Path) -> None:
    (payload,) = labelled(COPILOT / "copilot-hook-payloads-native.json", "agentStop")
    events = ws / "events.jsonl"
    shutil.copy(COPILOT / "events.jsonl", events)
    payload = {**payload, "cwd": str(ws), "transcriptPath": str(events)}
    assert run_cli("sessions", "claim", "demo", "--session", payload["sessionId"]).exit_code == 0
    result = fire(ws, payload, "--host", "copilot")
    assert (result.returncode, result.stderr) == (0, "")  # Copilot ignores exit 2
    answer = json.loads(result.stdout)
    assert answer["decision"] == "block"
    assert answer["reason"].startswith("run-continuation: roadmap `demo`")


def test_copilot_files_in_both_scopes(ws: Path) -> None:
    home = Path(str(ws.parent / "home"))
    assert copilot.config_path("project", ws, home, {}) == ws / ".github/hooks/agentcfg.json"
    assert copilot.config_path("user", ws, home, {}) == home / ".copilot/hooks/agentcfg.json"
    run_cli("hooks", "install", "--host", "copilot")
    data = json.loads((ws / ".github" / "hooks" / "agentcfg.json").read_text())
    assert data == {
        "version": 1,
        "hooks": {
            "agentStop": [
                {"type": "command", "bash": install.hook_command("copilot"), "timeoutSec": 30}
            ]
        },
    }


# --- what `copilot -p` tells of the agent's tool calls (`agentcfg run`'s ending) ---


def test_copilot_commands_nobody_could_approve_are_refusals() -> None:
    told = (COPILOT / "permission-denied.txt").read_text()
    found = copilot.refusals(told, "")
    assert found.denied == ("agentcfg roadmap done e2e 1.1",)
    assert found.failed == () and found.ignored == ()
    assert copilot.refusals("", told).denied == ()  # it says so on stdout only


def test_copilot_commands_that_failed_are_failures_not_refusals() -> None:
    told = (COPILOT / "command-failed.txt").read_text()
    found = copilot.refusals(told, "")
    assert found.denied == () and found.failed == ("agentcfg roadmap done e2e 1.1",)
    twice = copilot.refusals(told + "\n" + told.replace("e2e 1.1", "e2e 1.2"), "", keep=1)
    assert twice.failed == ("agentcfg roadmap done e2e 1.2",)


def test_copilot_allows_commands_headless_with_any_of_its_allowing_flags(tmp_path: Path) -> None:
    for extra in (("--allow-all",), ("--yolo",), ("--allow-tool=shell",)):
        assert copilot.asks(tmp_path, tmp_path, {}, extra) == [], extra
    assert len(copilot.asks(tmp_path, tmp_path, {}, ("--allow-all-paths",))) == 1
