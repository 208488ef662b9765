"""Qwen Code, Copilot CLI and OpenCode: payloads captured from the real binaries, their config
files, their session variables and their block caps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentcfg import install
from agentcfg.hosts import copilot, opencode, qwen
from agentcfg.hosts.registry import detect, host_of, session_env
from tests.conftest import FIXTURES as CLAUDE_FIXTURES
from tests.conftest import fire, run_cli, write_roadmap

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
QWEN = FIXTURES / "qwen-code-0.24.4"
COPILOT = FIXTURES / "copilot-cli-1.0.102"
OPENCODE = FIXTURES / "opencode-1.18.33"


def captured(path: Path, label: str) -> list[dict[str, Any]]:
    return [f["payload"] for f in json.loads(path.read_text()) if f["label"] == label]


def test_qwen_stop_payload_is_told_apart_from_claudes() -> None:
    (payload,) = captured(QWEN / "qwen-hook-payloads.json", "Stop")
    assert detect(payload).NAME == "qwen"
    event = qwen.to_event(payload)
    assert event.turn_id == "7fa38102-10da-4bd7-8a12-a2656253140c########0"
    assert event.last_assistant_message == "That step is done."
    assert (event.session_id, event.host, event.background_tasks) == (
        payload["session_id"],
        "qwen",
        0,
    )
    for n in (1, 2, 3, 4):
        claude = json.loads((CLAUDE_FIXTURES / f"stop-payload-{n}.json").read_text())
        assert detect(claude).NAME == "claude"


@pytest.mark.parametrize("shape", ["native", "claude-format"])
def test_copilot_payloads_of_both_shapes(tmp_path: Path, shape: str) -> None:
    (payload,) = captured(COPILOT / f"copilot-hook-payloads-{shape}.json", "agentStop")
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
    (payload,) = captured(COPILOT / "copilot-hook-payloads-native.json", "agentStop")
    events = ws / "events.jsonl"
    shutil.copy(COPILOT / "events.jsonl", events)
    payload = {**payload, "cwd": str(ws), "transcriptPath": str(events)}
    assert run_cli("sessions", "claim", "demo", "--session", payload["sessionId"]).exit_code == 0
    result = fire(ws, payload, "--host", "copilot")
    assert (result.returncode, result.stderr) == (0, "")  # Copilot ignores exit 2
    answer = json.loads(result.stdout)
    assert answer["decision"] == "block"
    assert answer["reason"].startswith("run-continuation: roadmap `demo`")


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


def test_qwen_install_raises_its_block_cap_and_uninstall_takes_it_back(ws: Path) -> None:
    home = ws.parent / "home"
    assert qwen.block_cap(ws, home, {}) is not None
    assert qwen._cap(ws, home, {}) == 8
    run_cli("hooks", "install", "--host", "qwen")
    settings = json.loads((ws / ".qwen" / "settings.json").read_text())
    assert settings["env"] == {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "100"}
    assert qwen._cap(ws, home, {}) == 100
    assert qwen._cap(ws, home, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "12"}) == 12  # the process wins
    run_cli("hooks", "uninstall", "--host", "qwen")
    assert not (ws / ".qwen").exists()


@pytest.mark.parametrize(
    ("settings", "env", "cap"),
    [
        ({"stopHookBlockingCap": 20}, {}, 20),
        ({"stopHookBlockingCap": 500}, {}, 100),
        ({"stopHookBlockingCap": 0}, {}, 8),
        ({"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "30"}, "stopHookBlockingCap": 20}, {}, 30),
        ({"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "many"}}, {}, 8),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": " 40 "}, 40),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "-3"}, 8),
        ({}, {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "²"}, 8),
    ],
)
def test_qwen_block_cap_follows_qwens_own_rule(
    tmp_path: Path, settings: dict[str, Any], env: dict[str, str], cap: int
) -> None:
    (tmp_path / ".qwen").mkdir()
    (tmp_path / ".qwen" / "settings.json").write_text(json.dumps(settings))
    assert qwen._cap(tmp_path, tmp_path / "home", env) == cap


def test_qwen_install_leaves_a_cap_the_person_set(ws: Path) -> None:
    path = ws / ".qwen" / "settings.json"
    path.parent.mkdir()
    mine = {"env": {"QWEN_CODE_STOP_HOOK_BLOCK_CAP": "50"}}
    path.write_text(json.dumps(mine))
    run_cli("hooks", "install", "--host", "qwen")
    assert json.loads(path.read_text())["env"] == mine["env"]
    run_cli("hooks", "uninstall", "--host", "qwen")
    assert json.loads(path.read_text()) == mine


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


def test_opencode_plugin_install_is_ours_alone(ws: Path) -> None:
    path = ws / ".opencode" / "plugin" / "agentcfg.js"
    assert run_cli("hooks", "install", "--host", "opencode").exit_code == 0
    source = path.read_text()
    assert opencode.registered({"source": source}) == [install.hook_command("opencode")]
    assert "unchanged" in run_cli("hooks", "install", "--host", "opencode").output
    run_cli("hooks", "uninstall", "--host", "opencode")
    assert not path.exists()
    path.parent.mkdir()
    path.write_text("export const Mine = async () => ({});\n")  # a plugin of the person's
    refused = run_cli("hooks", "install", "--host", "opencode")
    assert refused.exit_code == 1 and "not the plugin agentcfg writes" in refused.output
    assert "unchanged" in run_cli("hooks", "uninstall", "--host", "opencode").output
    assert path.read_text() == "export const Mine = async () => ({});\n"


def test_opencode_user_scope_follows_xdg_config_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert opencode.config_path("user", tmp_path, home, {}) == (
        home / ".config" / "opencode" / "plugin" / "agentcfg.js"
    )
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert opencode.config_path("user", tmp_path, home, xdg) == (
        tmp_path / "xdg" / "opencode" / "plugin" / "agentcfg.js"
    )


def test_doctor_on_the_three_hosts(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    steps = "".join(f"- [ ] **1.{n}** Step {n} <!-- verify: true -->\n" for n in range(1, 11))
    write_roadmap(ws, "long", "## Phase 1 — Long\n" + steps)
    for host in ("qwen", "copilot", "opencode"):
        assert run_cli("hooks", "install", "--host", host).exit_code == 0
    plugin = ws / ".opencode" / "plugin" / "agentcfg.js"
    plugin.write_text(plugin.read_text().replace("TIMEOUT_MS = 30000", "TIMEOUT_MS = 1"))
    findings = json.loads(run_cli("doctor", "--json").output)
    by_host = {
        h: [f for f in findings if f["subject"] == h] for h in ("qwen", "copilot", "opencode")
    }
    (long_copilot,) = [f for f in by_host["copilot"] if "`long`" in f["message"]]
    assert "has 10 open steps" in long_copilot["message"] and "after 8" in long_copilot["message"]
    assert not any("`demo`" in f["message"] for f in by_host["copilot"])  # 3 open steps: fine
    assert not any("`long`" in f["message"] for f in by_host["qwen"])  # raised to 100
    assert any("--trust-folder" in f["message"] for f in by_host["copilot"])
    assert any("opencode serve" in f["message"] for f in by_host["opencode"])
    (stale,) = [f for f in by_host["opencode"] if f["level"] == "warning"]
    assert "is not the plugin this agentcfg writes" in stale["message"]
    run_cli("hooks", "uninstall", "--host", "qwen")
    run_cli("hooks", "install", "--host", "qwen")
    (ws / ".qwen" / "settings.json").write_text('{"stopHookBlockingCap": 5}')
    run_cli("hooks", "install", "--host", "qwen")
    findings = json.loads(run_cli("doctor", "--json").output)
    qwen_long = [f for f in findings if f["subject"] == "qwen" and "`long`" in f["message"]]
    assert len(qwen_long) == 1 and "after 5" in qwen_long[0]["message"]
    assert "raises it to 100" in qwen_long[0]["fix"]


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
    quiet = run_cli(
        "sessions",
        "claim",
        "long",
        "--force",
        env={"QWEN_CODE_SESSION_ID": "q-1", "QWEN_CODE_STOP_HOOK_BLOCK_CAP": "9"},
    )
    assert quiet.exit_code == 0 and "note:" not in quiet.output
    short = run_cli("sessions", "claim", "long", "--force", env={"QWEN_CODE_SESSION_ID": "q-2"})
    assert "Qwen Code ends a prompt after 8 continuations" in short.output
