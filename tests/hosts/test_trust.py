"""What each host needs before it runs our hook: Codex's trust written by `hooks install --trust`
and taken out by `hooks uninstall`, and the findings `doctor` and install give per host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcfg import install
from agentcfg.hosts import codex
from tests.conftest import run_cli

CONFIG = """# my Codex settings
model = "o3"  # the model I like

[projects."/somewhere/else"]
trust_level = "trusted"

[mcp_servers.docs]
command = "docs-server"
"""


def test_the_hash_is_the_one_codex_reports() -> None:
    # `codex app-server` (0.169.0) reported this currentHash in hooks/list for this hook
    assert codex.hook_hash("/usr/bin/agentcfg hook stop --host codex", 30) == (
        "sha256:af3283bf4028382ba87b087cd1dd08def96ef4e8b89b610bf5601afc747671ad"
    )


@pytest.fixture
def codex_home(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = ws.parent / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def findings(host: str) -> list[dict[str, str]]:
    return [f for f in json.loads(run_cli("doctor", "--json").output) if f["subject"] == host]


def test_install_names_the_missing_trust_and_trust_writes_it(ws: Path, codex_home: Path) -> None:
    (codex_home / "config.toml").write_text(CONFIG)
    plain = run_cli("hooks", "install", "--host", "codex")
    assert f'needs [projects."{ws}"] trust_level = "trusted"' in plain.output
    key = f"{ws}/.codex/hooks.json:stop:0:0"
    assert f'needs [hooks.state."{key}"] trusted_hash = "sha256:' in plain.output
    assert [f["level"] for f in findings("codex")] == ["error", "error"]
    trusted = run_cli("hooks", "install", "--host", "codex", "--trust")
    assert trusted.exit_code == 0, trusted.output
    text = (codex_home / "config.toml").read_text()
    assert text.startswith(CONFIG)  # every byte and comment of the person's file kept
    assert f'[hooks.state."{key}"]' in text and f'[projects."{ws}"]' in text
    assert [f["level"] for f in findings("codex")] == ["ok", "ok"]
    again = run_cli("hooks", "install", "--host", "codex", "--trust")
    assert again.output.count("unchanged") == 2
    assert run_cli("hooks", "uninstall", "--host", "codex").exit_code == 0
    assert (codex_home / "config.toml").read_text() == CONFIG  # exactly as it was


def test_a_changed_command_needs_new_trust(ws: Path, codex_home: Path) -> None:
    run_cli("hooks", "install", "--host", "codex", "--trust")
    hooks = ws / ".codex" / "hooks.json"
    hooks.write_text(hooks.read_text().replace(install.hook_command("codex"), "agentcfg hook stop"))
    stale = [f for f in findings("codex") if f["level"] == "error"]
    assert len(stale) == 1 and "older command" in stale[0]["message"]
    assert stale[0]["fix"] == "agentcfg hooks install --host codex --trust"
    run_cli("hooks", "install", "--host", "codex", "--trust")
    assert {f["level"] for f in findings("codex")} == {"ok"}
    assert (codex_home / "config.toml").read_text().count("# >>> agentcfg") == 1


def test_a_trusted_parent_folder_is_enough_and_created_files_go_away(
    ws: Path, codex_home: Path
) -> None:
    (codex_home / "config.toml").write_text(f'[projects."{ws.parent}"]\ntrust_level = "trusted"\n')
    run_cli("hooks", "install", "--host", "codex", "--trust")
    assert f'[projects."{ws}"]' not in (codex_home / "config.toml").read_text()
    (codex_home / "config.toml").unlink()
    run_cli("hooks", "install", "--host", "codex", "--trust")
    assert (codex_home / "config.toml").stat().st_mode & 0o077 == 0  # may hold secrets
    run_cli("hooks", "uninstall", "--host", "codex")
    assert not (codex_home / "config.toml").exists()


def test_user_scope_honours_codex_home(ws: Path, codex_home: Path) -> None:
    result = run_cli("hooks", "install", "--host", "codex", "--scope", "user", "--trust")
    assert result.exit_code == 0, result.output
    assert (codex_home / "hooks.json").exists()
    text = (codex_home / "config.toml").read_text()
    assert f'[hooks.state."{codex_home}/hooks.json:stop:0:0"]' in text
    assert "[projects." not in text  # a user hook needs no project trust
    assert not (ws.parent / "home" / ".codex").exists()


def test_conflicting_trust_tables_are_refused_and_left_alone(ws: Path, codex_home: Path) -> None:
    conflict = f'[projects."{ws}"]\ntrust_level = "untrusted"\n'
    (codex_home / "config.toml").write_text(conflict)
    result = run_cli("hooks", "install", "--host", "codex", "--trust")
    assert result.exit_code == 1
    assert "trust them by hand" in result.output
    assert (codex_home / "config.toml").read_text() == conflict


def test_gemini_needs_a_trusted_folder_and_hooks_on(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "gemini")
    assert [f["level"] for f in findings("gemini")] == ["error"]
    gemini = ws.parent / "home" / ".gemini"
    gemini.mkdir(parents=True)
    (gemini / "trustedFolders.json").write_text(json.dumps({str(ws.parent): "TRUST_FOLDER"}))
    assert [f["level"] for f in findings("gemini")] == ["ok"]
    (gemini / "settings.json").write_text(json.dumps({"hooksConfig": {"enabled": False}}))
    off = findings("gemini")
    assert [f["level"] for f in off] == ["error", "ok"]
    assert "hooksConfig.enabled: false" in off[0]["message"]


def test_claude_settings_that_switch_hooks_off(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "claude")
    assert findings("claude") == []
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"disableAllHooks": True}))
    found = findings("claude")
    assert [f["level"] for f in found] == ["error"]
    assert "settings.local.json" in found[0]["message"]


def test_cursor_is_stated_as_not_proven(ws: Path) -> None:
    run_cli("hooks", "install", "--host", "cursor")
    assert "not proven against a real Cursor binary" in findings("cursor")[0]["message"]
