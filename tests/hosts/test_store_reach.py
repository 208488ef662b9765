"""Whether each host's sandbox keeps the agent from writing the person's own store (the key
that seals the records deciding a run's ending), as its configuration and the person's own
arguments to `agentcfg run` set it; and the line doctor and `agentcfg run` say it with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.core.texts import store_reach
from agentcfg.hosts import claude, codex, gemini
from agentcfg.hosts.base import Reach
from agentcfg.hosts.registry import HOSTS, adapter
from tests.conftest import run_cli


@pytest.fixture
def where(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace, a home, and the person's store under the home."""
    root, home = tmp_path / "ws", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    return root, home, home / ".local" / "state" / "agentcfg"


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("name", [n for n in HOSTS if n not in ("claude", "codex", "gemini")])
def test_a_host_whose_sandbox_agentcfg_does_not_read_is_open(
    where: tuple[Path, Path, Path], name: str
) -> None:
    root, home, store = where
    assert adapter(name).store_reach(root, home, {}, store, ("--sandbox",)) == Reach(False)


CODEX = [
    ("", (), False),
    ('sandbox_mode = "workspace-write"\n', (), True),
    ('sandbox_mode = "read-only"\n', (), True),
    ('sandbox_mode = "danger-full-access"\n', (), False),
    ('sandbox_mode = "workspace-write"\n', ("--dangerously-bypass-approvals-and-sandbox",), False),
    ('sandbox_mode = "danger-full-access"\n', ("--sandbox", "workspace-write"), True),
    ("", ("--full-auto",), True),
    ("", ("-s", "read-only"), True),
    ("", ("--sandbox=workspace-write",), True),
    ("", ("-c", 'sandbox_mode="workspace-write"'), True),
    ('sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\nwritable_roots = ["/home-x"]\n',
     (), False),
    ('sandbox_mode = "workspace-write"\n[sandbox_workspace_write]\nwritable_roots = ["/opt"]\n',
     (), True),
]  # fmt: skip


@pytest.mark.parametrize(("config", "extra", "sealed"), CODEX)
def test_codex_is_sealed_by_its_sandbox_mode_unless_the_store_is_writable(
    where: tuple[Path, Path, Path], config: str, extra: tuple[str, ...], sealed: bool
) -> None:
    root, home, _ = where
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text(config)
    store = Path("/home-x/.local/state/agentcfg")  # not under /tmp, which Codex lets it write
    assert codex.store_reach(root, home, {}, store, extra).sealed is sealed


def test_codex_in_a_workspace_that_holds_the_store_is_open(where: tuple[Path, Path, Path]) -> None:
    root, home, _store = where
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('sandbox_mode = "workspace-write"\n')
    assert not codex.store_reach(root, home, {}, root / "xdg" / "agentcfg", ()).sealed
    assert codex.store_reach(root, home, {}, Path("/home-x/s"), ()).sealed
    assert not codex.store_reach(root, home, {"TMPDIR": "/home-x"}, Path("/home-x/s"), ()).sealed


CLAUDE = [
    ({}, (), False),
    ({"sandbox": {"enabled": True}}, (), False),  # a refused command may run unsandboxed
    ({"sandbox": {"enabled": True, "allowUnsandboxedCommands": False}}, (), True),
    ({"sandbox": {"enabled": True, "allowUnsandboxedCommands": False}},
     ("--dangerously-skip-permissions",), False),
    ({"sandbox": {"enabled": True, "allowUnsandboxedCommands": False},
      "permissions": {"defaultMode": "bypassPermissions"}}, (), False),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "extra", "sealed"), CLAUDE)
def test_claude_is_sealed_by_a_sandbox_no_command_leaves(
    where: tuple[Path, Path, Path],
    settings: dict[str, object],
    extra: tuple[str, ...],
    sealed: bool,
) -> None:
    root, home, store = where
    write_json(home / ".claude" / "settings.json", settings)
    assert claude.store_reach(root, home, {}, store, extra).sealed is sealed


def test_claudes_project_settings_win_over_the_users(where: tuple[Path, Path, Path]) -> None:
    root, home, store = where
    write_json(home / ".claude" / "settings.json", {"sandbox": {"enabled": True}})
    write_json(
        root / ".claude" / "settings.local.json", {"sandbox": {"allowUnsandboxedCommands": False}}
    )
    assert claude.store_reach(root, home, {}, store, ()).sealed
    write_json(root / ".claude" / "settings.json", {"sandbox": {"enabled": False}})
    assert not claude.store_reach(root, home, {}, store, ()).sealed
    write_json(root / ".claude" / "settings.local.json", {"sandbox": {"enabled": True}})
    assert not claude.store_reach(root, home, {}, store, ()).sealed  # it leaves commands again


GEMINI = [
    ({}, {}, (), False),
    ({"tools": {"sandbox": True}}, {}, (), True),
    ({"tools": {"sandbox": "docker"}}, {}, (), True),
    ({"tools": {"sandbox": False}}, {}, (), False),
    ({"sandbox": "podman"}, {}, (), True),  # the settings' older shape
    ({"tools": {"sandbox": True}}, {"GEMINI_SANDBOX": "false"}, (), False),
    ({}, {"GEMINI_SANDBOX": "true"}, (), True),
    ({}, {"GEMINI_SANDBOX": "0"}, ("-s",), True),
    ({"tools": {"sandbox": True}}, {}, ("--sandbox=false",), False),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "env", "extra", "sealed"), GEMINI)
def test_gemini_is_sealed_by_its_sandbox(
    where: tuple[Path, Path, Path],
    settings: dict[str, object],
    env: dict[str, str],
    extra: tuple[str, ...],
    sealed: bool,
) -> None:
    root, home, store = where
    write_json(home / ".gemini" / "settings.json", settings)
    assert gemini.store_reach(root, home, env, store, extra).sealed is sealed


def test_the_lines_that_say_it(snapshot: SnapshotAssertion) -> None:
    sealed = store_reach("Codex CLI", True, "sandbox_mode = workspace-write in config.toml")
    assert (sealed, store_reach("Claude Code", False, "")) == snapshot


def test_doctor_says_it_for_each_wired_host(ws: Path) -> None:
    assert run_cli("hooks", "install", "--host", "gemini").exit_code == 0
    write_json(ws / ".gemini" / "settings.json", {
        **json.loads((ws / ".gemini" / "settings.json").read_text()), "tools": {"sandbox": True},
    })  # fmt: skip
    assert run_cli("hooks", "install", "--host", "claude").exit_code == 0
    shown = json.loads(run_cli("doctor", "--json").output)
    reach = {f["subject"]: (f["level"], f["message"][:6]) for f in shown if "store" in f["subject"]}
    assert reach == {"claude (store)": ("warning", "open —"), "gemini (store)": ("ok", "sealed")}
