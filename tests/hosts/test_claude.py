"""Claude Code: where it records our plugin, and the settings that switch its hooks off."""

from __future__ import annotations

import json
from pathlib import Path

from agentcfg.hosts.base import Plugin
from tests.conftest import run_cli
from tests.hosts.shared import enable_claude, findings, plugin_of, write


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


def test_claude_settings_that_switch_hooks_off(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "claude")
    assert findings("claude") == []
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": True}))
    found = findings("claude")
    assert [f["level"] for f in found] == ["error"]
    assert "settings.local.json" in found[0]["message"]
