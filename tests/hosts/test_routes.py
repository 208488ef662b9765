"""One route at a time: where each host records our plugin, `hooks install` refusing while it is
installed, the plugin's hook stepping aside for a settings hook, and `doctor` on both routes.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import install
from agentcfg.hosts.base import PLUGIN_ENV
from agentcfg.hosts.defaults import settings_hook
from agentcfg.hosts.registry import HOSTS, adapter
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, hook_env, run_cli
from tests.helpers import ledger
from tests.hosts.shared import enable_claude, plugin_of, write


def installed(host: str, home: Path) -> Path:
    """Record our plugin as the host's own install command does; the file that says so."""
    if host == "claude":
        return enable_claude(home / ".claude" / "settings.json")
    if host == "codex":
        return write(
            home / ".codex" / "config.toml",
            'model = "m"\n\n[plugins."agentcfg@agentcfg"]\nenabled = true\n',
        )
    folder = home / ".gemini" / "extensions" / "agentcfg"
    folder.mkdir(parents=True)
    return folder


PLUGIN_HOSTS = ("claude", "codex", "gemini")


@pytest.mark.parametrize("host", PLUGIN_HOSTS)
def test_each_host_finds_its_installed_plugin(ws: Path, host: str) -> None:
    assert plugin_of(host, ws) is None
    record = installed(host, ws.parent / "home")
    found = plugin_of(host, ws)
    assert found is not None and found.record == record
    assert (
        found.remove
        == {
            "claude": "claude plugin uninstall agentcfg@agentcfg --scope user",
            "codex": "codex plugin remove agentcfg@agentcfg",
            "gemini": "gemini extensions uninstall agentcfg",
        }[host]
    )


@pytest.mark.parametrize("host", sorted(set(HOSTS) - set(PLUGIN_HOSTS)))
def test_the_other_hosts_have_no_plugin_route(ws: Path, host: str) -> None:
    for other in PLUGIN_HOSTS:
        installed(other, ws.parent / "home")
    assert plugin_of(host, ws) is None


@pytest.mark.parametrize("host", PLUGIN_HOSTS)
def test_hooks_install_refuses_while_the_plugin_is_installed(
    ws: Path, host: str, snapshot: SnapshotAssertion
) -> None:
    record = installed(host, ws.parent / "home")
    result = run_cli("hooks", "install", "--host", host)
    assert result.exit_code == 1
    assert result.output.replace(str(record), "<record>") == snapshot
    assert not install.config_path(host, "project", ws, ws.parent / "home", {}).exists()


@pytest.mark.parametrize("host", HOSTS)
def test_settings_hook_finds_the_hook_install_wrote(ws: Path, host: str) -> None:
    home = ws.parent / "home"
    assert settings_hook(adapter(host), ws, home, {}) is None
    assert run_cli("hooks", "install", "--host", host).exit_code == 0
    path = install.config_path(host, "project", ws, home, {})
    assert settings_hook(adapter(host), ws, home, {}) == path


def test_a_settings_hook_that_cannot_run_does_not_count(ws: Path) -> None:
    path = install.config_path("claude", "user", ws, ws.parent / "home", {})
    write(path, json.dumps(adapter("claude").install({}, "/gone/venv/bin/agentcfg hook stop")))
    assert settings_hook(adapter("claude"), ws, ws.parent / "home", {}) is None


@pytest.fixture
def claimed(ws: Path) -> Path:
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    return ws


@pytest.mark.parametrize(
    ("through_plugin", "settings", "blocks"),
    [
        (True, None, True),  # the plugin alone: it runs the hook
        (True, "runs", False),  # both: the plugin's fire steps aside
        (True, "broken", True),  # a settings hook that cannot run does not count
        (False, "runs", True),  # the settings hook itself never steps aside
    ],
)
def test_the_plugin_hook_steps_aside_for_a_settings_hook(
    claimed: Path, through_plugin: bool, settings: str | None, blocks: bool
) -> None:
    if settings:
        command = install.hook_command("claude") if settings == "runs" else "/gone/agentcfg stop"
        path = install.config_path("claude", "project", claimed, claimed.parent / "home", {})
        write(path, json.dumps(adapter("claude").install({}, command)))
    env = hook_env(claimed, **({PLUGIN_ENV: "1"} if through_plugin else {}))
    result = fire(claimed, fixture_payload(1, claimed), "--host", "claude", env=env)
    assert (result.returncode, result.stdout) == ((2, "") if blocks else (0, ""))
    assert [e["event"] for e in ledger(claimed)] == (["engage"] if blocks else [])


def test_doctor_on_the_plugin_route_and_on_both(
    ws: Path, snapshot: SnapshotAssertion, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed("codex", ws.parent / "home")
    monkeypatch.setenv("CODEX_HOME", str(ws.parent / "home" / ".codex"))
    alone = json.loads(run_cli("doctor", "--json").output)
    assert [f for f in alone if f["subject"] in ("codex (plugin)", "hosts")] == [
        {
            "level": "ok",
            "subject": "codex (plugin)",
            "message": f"stop hook wired by the agentcfg plugin ({ws.parent}/home/.codex/config.toml)",
            "fix": "",
        }
    ]
    # a settings hook written before the plugin came
    path = install.config_path("codex", "project", ws, ws.parent / "home", {})
    write(path, json.dumps(adapter("codex").install({}, install.hook_command("codex"))))
    both = run_cli("doctor")
    line = next(i for i, text in enumerate(both.output.splitlines()) if "(plugin)" in text)
    shown = both.output.splitlines()[line : line + 2]
    assert "\n".join(shown).replace(str(ws.parent), "<tmp>") == snapshot
