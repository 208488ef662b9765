"""`agentcfg doctor`: the last fire per host, and `--probe` running each registered hook."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcfg import install, state
from agentcfg.hosts.registry import HOSTS, adapter
from tests.conftest import cli_process, fire, fixture_payload, run_cli


def findings(*args: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(run_cli("doctor", "--json", *args).output)
    return found


def about(found: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    return [f for f in found if f["subject"].endswith(suffix)]


def register(ws: Path, host: str, command: str) -> Path:
    path = install.config_path(host, "project", ws, ws.parent / "home", {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(adapter(host).render(adapter(host).install({}, command)))
    return path


def test_last_fire_per_host_from_the_ledger(ws: Path) -> None:
    assert about(findings(), "fires") == []
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    assert fire(ws, fixture_payload(1, ws)).returncode == 2
    for at, host, event in ((2e9, "gemini", "complete"), (2e9 + 1, "nobody", "engage")):
        state.append_ledger(ws / "state", state.event(event, at, "r", None, host=host))
    fires = about(findings(), "fires")
    assert [(f["subject"], f["level"]) for f in fires] == [
        ("claude fires", "ok"),
        ("gemini fires", "ok"),
    ]
    assert fires[0]["message"].startswith("last recorded fire 20")
    assert fires[0]["message"].endswith(": engage on `demo`")
    assert fires[1]["message"] == "last recorded fire 2033-05-18T03:33:20Z: complete"


def test_probe_is_only_run_when_asked(ws: Path) -> None:
    register(ws, "claude", "/nowhere/agentcfg hook stop --host claude")
    assert about(findings(), "probe") == []
    assert about(findings("--probe"), "probe")[0]["level"] == "warning"


@pytest.mark.parametrize("host", HOSTS)
def test_probe_of_a_good_registration(ws: Path, host: str) -> None:
    register(ws, host, install.hook_command(host))
    (probe,) = about(findings("--probe"), "probe")
    assert probe["level"] == "ok", probe
    assert probe["message"].endswith(f"answers as {adapter(host).TITLE} expects")
    assert not (ws / "state").exists()  # the probe touched nothing here


@pytest.mark.parametrize(
    "command",
    [
        "/old/venv/bin/agentcfg hook stop --host {host}",
        sys.executable + " -m agentcfg hook stop --host {host}",
        "{script} hook stop --host claud",
    ],
    ids=["stale-path", "wrong-interpreter", "bad-arguments"],
)
@pytest.mark.parametrize("host", ["claude", "cursor"])
def test_probe_of_a_broken_registration(ws: Path, host: str, command: str) -> None:
    """Not the line this agentcfg writes: named and not run (the wiring check says it fails)."""
    script = install.hook_command("claude").split()[0]
    shown = command.format(host=host, script=script)
    register(ws, host, shown)
    (probe,) = about(findings("--probe"), "probe")
    assert probe["level"] == "warning"
    assert probe["message"].startswith(f"`{shown}` is not ours, not run")
    assert probe["fix"].endswith(f"agentcfg hooks install --host {host} --scope project")


def test_probe_of_a_hook_that_blocks(ws: Path) -> None:
    """A line that only mentions us is no hook of ours: nothing of it is probed, nothing run."""
    register(ws, "claude", "echo 'keep going' >&2; exit 2 # agentcfg hook stop")
    assert about(findings("--probe"), "probe") == []  # not ours: not even registered as ours


def test_probe_payloads_are_recognised_as_their_own_host() -> None:
    from agentcfg.hosts.registry import detect

    for name in HOSTS:
        payload = adapter(name).probe("/tmp/x").payload
        assert detect(payload) is adapter(name)
        assert adapter(name).session_of(payload) == "agentcfg-doctor-probe"
        assert adapter(name).cwd_of(payload) == "/tmp/x"


def test_probe_as_a_process(ws: Path) -> None:
    register(ws, "codex", install.hook_command("codex"))
    proc = cli_process(ws, "doctor", "--probe")
    assert "ok       codex (project) probe:" in proc.stdout, proc.stdout
