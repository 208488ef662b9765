"""Installs and `doctor --probe` against a hostile repository: files that lead out of the
project, hook lines that only mention us, a generated plugin file someone changed, and a
workspace path that is not UTF-8."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcfg import install
from agentcfg.hosts.opencode import plugin_source
from tests.conftest import hook_env, run_cli
from tests.hostile.commands import cli

HOOKED = ("claude", "codex", "gemini", "qwen", "cursor")


def project_file(ws: Path, host: str) -> Path:
    return install.config_path(host, "project", ws, ws.parent / "home", {})


def env_for(ws: Path) -> dict[str, str]:
    return {**hook_env(ws), "CODEX_HOME": str(ws.parent / "home" / ".codex")}


@pytest.mark.parametrize("host", HOOKED)
def test_a_project_config_file_linked_outside_the_project_is_refused(
    ws: Path, tmp_path: Path, host: str
) -> None:
    outside = tmp_path / "dotfiles" / "settings.json"
    outside.parent.mkdir()
    outside.write_text("{}\n")
    path = project_file(ws, host)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(outside)
    out = cli(ws, ["hooks", "install", "--host", host], 1, env=env_for(ws))
    assert "outside the project" in out.stderr
    assert outside.read_text() == "{}\n" and path.is_symlink()


def test_a_project_config_file_linked_inside_the_project_is_written_through(ws: Path) -> None:
    kept = ws / "shared-settings.json"
    kept.write_text("{}\n")
    path = project_file(ws, "claude")
    path.parent.mkdir(parents=True)
    path.symlink_to(kept)
    cli(ws, ["hooks", "install", "--host", "claude"], 0)
    assert path.is_symlink() and install.hook_command("claude") in kept.read_text()


def test_codex_trust_keeps_a_linked_config_toml_a_link(ws: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "codex.toml"
    dotfiles.parent.mkdir()
    dotfiles.write_text('model = "m"\n')
    config = ws.parent / "home" / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.symlink_to(dotfiles)
    env = {"CODEX_HOME": str(config.parent)}
    assert run_cli("hooks", "install", "--host", "codex", "--trust", env=env).exit_code == 0
    assert config.is_symlink()
    assert (
        dotfiles.read_text().startswith('model = "m"\n') and "trusted_hash" in dotfiles.read_text()
    )
    assert run_cli("hooks", "uninstall", "--host", "codex", env=env).exit_code == 0
    assert config.is_symlink() and dotfiles.read_text() == 'model = "m"\n'


def test_a_workspace_path_that_is_not_utf8_is_one_clear_line(tmp_path: Path) -> None:
    root = Path(os.fsdecode(bytes(tmp_path) + b"/ws\xff"))
    (root / "roadmaps").mkdir(parents=True)
    out = cli(root, ["hooks", "install", "--host", "codex", "--trust"], 1, env=env_for(root))
    assert out.stderr.startswith("agentcfg: error: ") and "not UTF-8" in out.stderr
    assert out.stderr.count("\n") == 1


FOREIGN = [
    "touch MARK; agentcfg hook stop",
    "agentcfg hook stop --host claude && touch MARK",
    "agentcfg hook stop --host claude # touch MARK",
    "/usr/bin/env touch MARK agentcfg stop",
]


def claude_settings(*commands: str) -> dict[str, object]:
    groups = [{"hooks": [{"type": "command", "command": c}]} for c in commands]
    return {"model": "opus", "hooks": {"Stop": groups}}


def test_hooks_uninstall_takes_out_only_what_install_wrote(ws: Path) -> None:
    path = project_file(ws, "claude")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(claude_settings(*FOREIGN)))
    cli(ws, ["hooks", "install", "--host", "claude"], 0)
    after_install = json.loads(path.read_text())
    commands = [g["hooks"][0]["command"] for g in after_install["hooks"]["Stop"]]
    assert commands == [*FOREIGN, install.hook_command("claude")]  # theirs kept, ours added
    cli(ws, ["hooks", "uninstall", "--host", "claude"], 0)
    assert json.loads(path.read_text()) == claude_settings(*FOREIGN)


@pytest.mark.parametrize("command", FOREIGN)
def test_doctor_probe_never_runs_a_hook_line_that_is_not_ours(ws: Path, command: str) -> None:
    path = project_file(ws, "claude")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(claude_settings(command)))
    out = cli(ws, ["doctor", "--probe"], (0, 1))
    assert not (ws / "MARK").exists()
    assert f"`{command}` answered" not in out.stdout


def test_doctor_probe_names_a_changed_hook_line_and_does_not_run_it(ws: Path) -> None:
    """A line of our shape that is not the one this agentcfg writes: named, not run."""
    fake = ws / "bin" / "agentcfg"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\ntouch MARK\n")
    fake.chmod(0o755)
    path = project_file(ws, "claude")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(claude_settings(f"{fake} hook stop --host claude")))
    out = cli(ws, ["doctor", "--probe"], (0, 1))
    assert not (ws / "MARK").exists()
    assert (
        f"claude (project) probe: `{fake} hook stop --host claude` is not ours, not run"
        in out.stdout
    )


@pytest.mark.parametrize("change", ["command", "body"])
def test_doctor_probe_never_runs_a_changed_generated_plugin(ws: Path, change: str) -> None:
    ours = install.hook_command("opencode")
    if change == "command":
        source = plugin_source("touch MARK")
    else:
        source = plugin_source(ours).replace("session.idle", "session.idle2") + "\n// changed\n"
    path = project_file(ws, "opencode")
    path.parent.mkdir(parents=True)
    path.write_text(source)
    out = cli(ws, ["doctor", "--probe"], (0, 1))
    assert not (ws / "MARK").exists()
    assert "opencode (project) probe:" in out.stdout and "not ours, not run" in out.stdout


def test_doctor_probe_still_runs_our_own_hook(ws: Path) -> None:
    cli(ws, ["hooks", "install", "--host", "opencode"], 0)
    out = cli(ws, ["doctor", "--probe"], (0, 1))
    assert (
        "opencode (project) probe: " in out.stdout and "answers as OpenCode expects" in out.stdout
    )
