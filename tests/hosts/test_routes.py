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
from agentcfg.hosts.base import PLUGIN_ENV, Plugin, settings_hook
from agentcfg.hosts.registry import HOSTS, adapter
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, hook_env, ledger, run_cli


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def enable_claude(path: Path, on: bool = True, key: str = "agentcfg@agentcfg") -> Path:
    return write(path, json.dumps({"model": "opus", "enabledPlugins": {key: on}}))


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


def plugin_of(host: str, ws: Path, env: dict[str, str] | None = None) -> Plugin | None:
    return adapter(host).plugin(ws, ws.parent / "home", env or {})


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


def test_claude_the_narrowest_settings_file_decides(ws: Path) -> None:
    home = ws.parent / "home"
    enable_claude(home / ".claude" / "settings.json")
    enable_claude(ws / ".claude" / "settings.json", on=False)  # the project turns it off
    assert plugin_of("claude", ws) is None
    local = enable_claude(ws / ".claude" / "settings.local.json")  # and this person back on
    assert plugin_of("claude", ws) == Plugin(
        local, "claude plugin uninstall agentcfg@agentcfg --scope local"
    )


def test_claude_any_marketplace_but_only_our_plugin(ws: Path) -> None:
    settings = ws / ".claude" / "settings.json"
    enable_claude(settings, key="agentcfg-extras@team")
    assert plugin_of("claude", ws) is None
    enable_claude(settings, key="agentcfg@team")
    assert plugin_of("claude", ws) == Plugin(
        settings, "claude plugin uninstall agentcfg@team --scope project"
    )


def test_claude_unreadable_settings_mean_no_plugin(ws: Path) -> None:
    write(ws.parent / "home" / ".claude" / "settings.json", "{not json")
    write(ws / ".claude" / "settings.json", json.dumps({"enabledPlugins": ["agentcfg@x"]}))
    assert plugin_of("claude", ws) is None


@pytest.mark.parametrize(
    ("config", "found"),
    [
        ('[plugins."agentcfg@mine"]\nenabled = false\n', None),
        ('[plugins."agentcfg@mine"]  # ours\nenabled = true # yes\n', "agentcfg@mine"),
        ('[plugins."other@mine"]\nenabled = true\n[projects."/x"]\nenabled = false\n', None),
        ('[plugins."agentcfg@a"]\nenabled = false\n[plugins."agentcfg@b"]\n', "agentcfg@b"),
        ("[plugins\n\x00", None),
    ],
)
def test_codex_reads_its_plugin_tables(ws: Path, config: str, found: str | None) -> None:
    codex_home = ws.parent / "elsewhere"
    write(codex_home / "config.toml", config)
    plugin = plugin_of("codex", ws, {"CODEX_HOME": str(codex_home)})
    assert (plugin.remove.split()[-1] if plugin else None) == found


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
