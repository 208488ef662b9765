"""Sessions across hosts: the session variable each host sets, read by `sessions claim`, and the
note a claim gives when a host's block cap ends a run short of its roadmap."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcfg.hosts.registry import host_of, session_env
from tests.conftest import run_cli, write_roadmap


@pytest.mark.parametrize(
    ("variable", "host"),
    [
        ("QWEN_CODE_SESSION_ID", "qwen"),
        ("COPILOT_AGENT_SESSION_ID", "copilot"),
        ("OPENCODE_SESSION_ID", "opencode"),
    ],
)
def test_claim_reads_the_session_variable_of_each_host(ws: Path, variable: str, host: str) -> None:
    assert variable in session_env()
    result = run_cli("sessions", "claim", "demo", env={variable: "s-1"})
    assert result.exit_code == 0, result.output
    assert "claimed roadmap `demo` for session s-1" in result.output
    found = host_of({variable: "s-1"})
    assert found is not None and host == found.NAME


def test_claim_tells_the_agent_about_a_host_cap(ws: Path) -> None:
    steps = "".join(f"- [ ] **1.{n}** Step {n}\n" for n in range(1, 10))
    write_roadmap(ws, "long", "## Phase 1 — Long\n" + steps)
    told = run_cli("sessions", "claim", "long", env={"COPILOT_AGENT_SESSION_ID": "c-1"})
    assert told.exit_code == 0
    assert told.output.splitlines()[-1] == (
        "note: roadmap `long` has 9 open steps, but Copilot CLI ends a prompt after 8 "
        "continuations: the run will stop short of the roadmap's end; no setting raises it: "
        "send another prompt (`copilot --continue`) to go on."
    )
    assert run_cli("sessions", "release", "--session", "c-1").exit_code == 0  # the person
    quiet = run_cli(
        "sessions",
        "claim",
        "long",
        env={"QWEN_CODE_SESSION_ID": "q-1", "QWEN_CODE_STOP_HOOK_BLOCK_CAP": "9"},
    )
    assert quiet.exit_code == 0 and "note:" not in quiet.output
    assert run_cli("sessions", "release", "--session", "q-1").exit_code == 0
    short = run_cli("sessions", "claim", "long", env={"QWEN_CODE_SESSION_ID": "q-2"})
    assert "Qwen Code ends a prompt after 8 continuations" in short.output
