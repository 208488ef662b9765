"""`agentcfg hooks install|uninstall` over real config files, and `agentcfg doctor`."""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import install
from agentcfg.hosts.registry import HOSTS, adapter
from tests.conftest import run_cli, write_roadmap

EXISTING = {
    "claude": {
        "model": "opus",
        "permissions": {"allow": ["Bash(make test)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
        },
    },
    "codex": {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}},
    "gemini": {
        "general": {"vimMode": True},
        "hooks": {
            "AfterAgent": [{"matcher": "*", "hooks": [{"type": "command", "command": "log"}]}]
        },
    },
    "cursor": {
        "version": 1,
        "hooks": {"stop": [{"command": "./audit.sh"}], "afterFileEdit": [{"command": "fmt"}]},
    },
    "qwen": {
        "model": {"name": "qwen3-coder"},
        "env": {"FOO": "bar"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
    },
    "copilot": {
        "version": 1,
        "hooks": {"agentStop": [{"type": "command", "bash": "./log.sh", "timeoutSec": 5}]},
    },
}
JSON_HOSTS = list(EXISTING)  # OpenCode's file is our own plugin, not a shared JSON file


def config(ws: Path, host: str) -> Path:
    return install.config_path(host, "project", ws, ws.parent / "home", {})


@pytest.mark.parametrize("host", JSON_HOSTS)
def test_install_into_an_existing_file_keeps_everything_else(ws: Path, host: str) -> None:
    path = config(ws, host)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(EXISTING[host], indent=4))
    result = run_cli("hooks", "install", "--host", host)
    assert result.exit_code == 0, result.output
    data = json.loads(path.read_text())
    assert adapter(host).registered(data) == [install.hook_command(host)]
    assert adapter(host).uninstall(data) == EXISTING[host]  # everything else is as it was
    once = path.read_bytes()
    again = run_cli("hooks", "install", "--host", host)
    assert "unchanged" in again.output
    assert path.read_bytes() == once  # twice = once
    removed = run_cli("hooks", "uninstall", "--host", host)
    assert removed.exit_code == 0
    assert json.loads(path.read_text()) == EXISTING[host]  # reversible
    assert "unchanged" in run_cli("hooks", "uninstall", "--host", host).output


@pytest.mark.parametrize("host", HOSTS)
def test_install_creates_and_uninstall_removes(
    ws: Path, host: str, snapshot: SnapshotAssertion
) -> None:
    result = run_cli("hooks", "install", "--host", host)
    assert result.exit_code == 0
    command = install.hook_command(host)
    words = json.dumps(shlex.split(command))  # how the OpenCode plugin holds it
    shown = result.output.replace(command, "<command>").replace(words, "<words>")
    shown = shown.replace(command.replace(" stop ", " session-start "), "<session-start>")
    shown = re.sub(r"sha256:[0-9a-f]{64}", "sha256:<hash of the command>", shown)
    assert shown.replace(str(ws.parent), "<tmp>") == snapshot
    assert config(ws, host).exists()
    run_cli("hooks", "uninstall", "--host", host)
    assert not config(ws, host).exists()
    assert not config(ws, host).parent.exists()


def test_dry_run_writes_nothing(ws: Path) -> None:
    result = run_cli("hooks", "install", "--host", "claude", "--dry-run")
    assert "would be created" in result.output
    assert not (ws / ".claude").exists()


def test_user_scope_goes_to_the_home_folder(ws: Path) -> None:
    assert run_cli("hooks", "install", "--host", "gemini", "--scope", "user").exit_code == 0
    path = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    entry = json.loads(path.read_text())["hooks"]["AfterAgent"][0]["hooks"][0]
    assert entry["timeout"] == 30000  # Gemini counts milliseconds


def test_an_older_command_of_ours_is_replaced_not_doubled(ws: Path) -> None:
    path = config(ws, "claude")
    path.parent.mkdir()
    old = {
        "hooks": {
            "Stop": [
                {"hooks": [{"type": "command", "command": "/old/venv/bin/agentcfg hook stop"}]}
            ]
        }
    }
    path.write_text(json.dumps(old))
    run_cli("hooks", "install", "--host", "claude")
    assert adapter("claude").registered(json.loads(path.read_text())) == [
        install.hook_command("claude")
    ]


@pytest.mark.parametrize(
    "content", ["{not json", "[1, 2]", '{"hooks": []}', '{"hooks": {"Stop": {"a": 1}}}']
)
def test_a_malformed_file_is_reported_and_left_alone(ws: Path, content: str) -> None:
    path = config(ws, "claude")
    path.parent.mkdir()
    path.write_text(content)
    for verb in ("install", "uninstall"):
        result = run_cli("hooks", verb, "--host", "claude")
        assert result.exit_code == 1
        assert result.output.startswith("agentcfg: error: ")
        assert "left as it is" in result.output
        assert path.read_text() == content


def test_the_installed_command_runs_from_any_folder(ws: Path, tmp_path: Path) -> None:
    import subprocess

    run_cli("hooks", "install", "--host", "claude")
    command = adapter("claude").registered(json.loads(config(ws, "claude").read_text()))[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        command, shell=True, cwd=elsewhere, input="{}", capture_output=True, text=True, check=False
    )
    assert (proc.returncode, proc.stderr) == (0, "")


def test_doctor_clean_and_broken(
    ws: Path, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_cli("hooks", "install", "--host", "claude")
    run_cli("sessions", "claim", "demo", "--session", "doc")
    monkeypatch.setenv("AGENTCFG_SESSION_ID", "doc")
    clean = run_cli("doctor")
    assert clean.exit_code == 0, clean.output
    (ws / "agentcfg.yaml").write_text("mode: loud\n")
    (ws / "roadmaps" / "bad.md").write_text("---\nexecution: {mode: turbo}\n---\n- [ ] a\n")
    os.chmod(ws / "state", 0o755)
    hooks = config(ws, "claude")
    hooks.write_text(
        hooks.read_text().replace(install.hook_command("claude"), "/gone/agentcfg hook stop")
    )
    broken = run_cli("doctor")
    assert broken.exit_code == 1
    assert re.sub(r"/\S+/state", "<ws>/state", broken.output.replace(str(ws), "<ws>")) == snapshot
    findings = json.loads(run_cli("doctor", "--json").output)
    assert all(f["fix"] for f in findings if f["level"] == "error")
    assert stat.S_IMODE((ws / "state").stat().st_mode) == 0o755  # doctor only reports


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
