"""Codex: the fires of one turn captured from the real Codex 0.169.0, its plugin tables, its
token usage, and the trust `hooks install --trust` writes and `hooks uninstall` takes out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcfg import install
from agentcfg.hosts import codex
from agentcfg.hosts.registry import detect
from tests.conftest import run_cli
from tests.hosts.shared import FIXTURES, captured, findings, plugin_of, write, write_lines

CODEX = FIXTURES / "codex-0.169.0"
CONFIG = """# my Codex settings
model = "o3"  # the model I like

[projects."/somewhere/else"]
trust_level = "trusted"

[mcp_servers.docs]
command = "docs-server"
"""


def test_codex_fires_of_one_turn(tmp_path: Path) -> None:
    fires = captured(CODEX, "stop-payloads.json", CODEX / "transcript.jsonl")
    events = [detect(p).to_event(p) for p in fires]
    assert {e.host for e in events} == {"codex"}
    assert {e.turn_id for e in events} == {"01a22ce4-da7b-7f60-8a96-9b5340e7d970"}
    assert [e.stop_hook_active for e in events] == [False, True, True, True]
    assert {e.last_assistant_message for e in events} == {"That step is done."}
    assert not any(e.is_subagent for e in events)


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


def test_codex_parts_and_a_running_total_that_goes_back(tmp_path: Path) -> None:
    def count(inp: int, cached: int, written: int, out: int) -> dict[str, object]:
        usage = {"input_tokens": inp, "cached_input_tokens": cached,
                 "cache_write_input_tokens": written, "output_tokens": out}  # fmt: skip
        return {"type": "event_msg", "payload": {"type": "token_count",
                                                 "info": {"total_token_usage": usage}}}  # fmt: skip

    path = tmp_path / "t.jsonl"
    started = {"type": "event_msg", "payload": {"type": "task_started"}}
    words = {"type": "response_item", "payload": {"type": "message", "text": "task_started"}}
    write_lines(path, [count(100, 50, 0, 10), started, count(600, 400, 0, 20), words,
                 count(1100, 850, 100, 30)])  # fmt: skip
    spent = codex.usage_since(str(path), None, settle=0.0)
    assert spent.usage is not None
    assert spent.usage.to_json() == {
        "input": 100, "output": 20, "cache_read": 800, "cache_write": 100, "total": 1020
    }  # fmt: skip
    with path.open("ab") as handle:
        handle.write(json.dumps(count(5, 0, 0, 1)).encode() + b"\n")
    assert codex.usage_since(str(path), spent.end, settle=0.0).usage is None


def test_the_hash_is_the_one_codex_reports() -> None:
    # `codex app-server` (0.169.0) reported this currentHash in hooks/list for this hook
    assert codex.hook_hash("/usr/bin/agentcfg hook stop --host codex", 30) == (
        "sha256:af3283bf4028382ba87b087cd1dd08def96ef4e8b89b610bf5601afc747671ad"
    )
    # and these for a SessionStart hook, with the group's matcher and without one
    command = "/usr/bin/agentcfg hook session-start --host codex"
    assert codex.hook_hash(command, 30, "session_start", "compact") == (
        "sha256:77981d498832e760db6c4839378e358f4df396af0900cb4bc5eaa403703237a3"
    )
    assert codex.hook_hash(command, 30, "session_start") == (
        "sha256:1972c9d8dc8c9b59fe11ef42c52145b2ee4359f7b16a3ff9284bf5c2641a2546"
    )


@pytest.fixture
def codex_home(ws: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = ws.parent / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def test_install_names_the_missing_trust_and_trust_writes_it(ws: Path, codex_home: Path) -> None:
    (codex_home / "config.toml").write_text(CONFIG)
    plain = run_cli("hooks", "install", "--host", "codex")
    assert f'needs [projects."{ws}"] trust_level = "trusted"' in plain.output
    keys = [f"{ws}/.codex/hooks.json:stop:0:0", f"{ws}/.codex/hooks.json:session_start:0:0"]
    for key in keys:
        assert f'needs [hooks.state."{key}"] trusted_hash = "sha256:' in plain.output
    assert [f["level"] for f in findings("codex")] == ["error", "error", "error"]
    trusted = run_cli("hooks", "install", "--host", "codex", "--trust")
    assert trusted.exit_code == 0, trusted.output
    text = (codex_home / "config.toml").read_text()
    assert text.startswith(CONFIG)  # every byte and comment of the person's file kept
    assert all(f'[hooks.state."{key}"]' in text for key in keys) and f'[projects."{ws}"]' in text
    assert [f["level"] for f in findings("codex")] == ["ok", "ok", "ok"]
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


# --- what `codex exec` tells of the agent's commands (`agentcfg run`'s ending) ---


def test_codex_commands_its_read_only_sandbox_kept_from_writing_are_refusals() -> None:
    told = (CODEX / "sandbox-read-only.txt").read_text()
    found = codex.refusals("", told)
    # the command the agent gave, out of the shell line Codex ran it with
    assert found.denied == ("agentcfg roadmap done e2e 1.1",) * 4
    assert found.failed == () and found.ignored == ()


def test_codex_commands_that_failed_are_failures_not_refusals() -> None:
    told = (CODEX / "command-failed.txt").read_text()
    assert told.count(" exited 1 in ") == 4
    found = codex.refusals("", told)
    assert found.denied == ()
    assert found.failed == ("agentcfg roadmap done e2e 1.1",) * 3  # the last three
    assert codex.refusals("", told, keep=1).failed == ("agentcfg roadmap done e2e 1.1",)


def test_codex_commands_that_succeeded_tell_nothing() -> None:
    told = (CODEX / "commands-ran.txt").read_text()
    assert " succeeded in " in told
    assert codex.refusals("", told) == codex.refusals("", "")
    assert not codex.refusals("", "").denied


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("/bin/bash -lc 'make test'", "make test"),
        ("/usr/bin/zsh -c 'echo \"a b\"'", 'echo "a b"'),
        ("/bin/bash -lc 'unbalanced", "/bin/bash -lc 'unbalanced"),
        ("python3 -c 'x'", "python3 -c 'x'"),
    ],
)
def test_codex_command_lines_are_shown_as_the_agent_gave_them(line: str, shown: str) -> None:
    told = f"exec\n{line} in /home/dev/project\n exited 2 in 5ms:\nboom\n\ncodex\nok\n"
    assert codex.refusals("", told).failed == (shown,)
