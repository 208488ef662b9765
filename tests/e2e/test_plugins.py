"""The plugin route into the real hosts, with no `hooks install`: Claude Code validates the plugin
and the marketplace, then runs the hook the plugin brings (by `--plugin-dir`, and installed from the
repository's marketplace); Codex installs it from the marketplace; Gemini CLI links the repository
as an extension. Each run ends `complete`, and `/agentcfg:run e2e` reaches the model expanded.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import fake_model
from tests.e2e.harness import AGENTCFG, REPO, Run, agentcfg, assert_complete, binary, drive, project
from tests.e2e.test_claude_code import VERSIONS
from tests.e2e.test_claude_code import session as claude_session
from tests.e2e.test_codex import codex_project, exec_codex
from tests.e2e.test_codex import session as codex_session
from tests.e2e.test_gemini_cli import session as gemini_session

PLUGIN = REPO / "plugin"
EXPANDED = "1. Claim it for this session: `agentcfg sessions claim e2e`."  # from commands/run


def host_cli(program: Path, *args: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(program), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def claude_env(env: dict[str, str]) -> dict[str, str]:
    return {
        **env,
        "ANTHROPIC_BASE_URL": "{url}",
        "ANTHROPIC_API_KEY": "sk-test-local",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }


def run_claude(tmp_path: Path, version: str, prompt: str, *options: str) -> Run:
    root, home, env = project(tmp_path)
    claude = binary(f"claude-{version}", "claude")
    if not options:  # the plugin installed from the repository's own marketplace
        for args in (("marketplace", "add", str(REPO)), ("install", "agentcfg@agentcfg")):
            host_cli(claude, "plugin", *args, cwd=root, env=env)
    command = [str(claude), "-p", prompt, "--allowedTools", "Bash", *options]
    run = drive("claude", root, home, claude_env(env), command, idle=False)
    assert run.proc.returncode == 0, run.failure()
    assert not (root / ".claude").exists()  # no settings hook: the plugin's alone
    assert_complete(run, claude_session(run))
    # the feedback names the hook that sent it: the plugin's shim (2.1.328 shows its root expanded)
    assert all('/bin/agentcfg" hook stop --host claude]: ' in t for t in run.script.continuations())
    return run


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("target", [PLUGIN, REPO], ids=["plugin", "marketplace"])
def test_claude_validates_the_plugin_and_the_marketplace(
    tmp_path: Path, version: str, target: Path
) -> None:
    _, _, env = project(tmp_path)
    claude = binary(f"claude-{version}", "claude")
    shown = host_cli(claude, "plugin", "validate", str(target), cwd=tmp_path, env=env)
    assert "Validation passed" in shown and "error" not in shown.lower()


def test_claude_by_plugin_dir(tmp_path: Path) -> None:
    run = run_claude(
        tmp_path, VERSIONS[-1], "Work through roadmaps/e2e.md.", "--plugin-dir", str(PLUGIN)
    )
    assert run.events()[-1] == "complete"


@pytest.fixture
def claude_requests(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every request Claude Code sends the scripted model, whole."""
    seen: list[dict[str, Any]] = []

    def recorded(script: fake_model.Script, path: str, body: dict[str, Any]) -> Any:
        seen.append(body)
        return fake_model.claude(script, path, body)

    monkeypatch.setitem(fake_model.WIRES, "claude", recorded)
    return seen


def test_claude_by_the_marketplace_and_its_run_command(
    tmp_path: Path, claude_requests: list[dict[str, Any]]
) -> None:
    run = run_claude(tmp_path, VERSIONS[0], "/agentcfg:run e2e")
    first = next(r for r in claude_requests if r.get("tools"))
    sent = "\n".join(fake_model._text(m.get("content")) for m in first["messages"])
    assert "<command-name>/agentcfg:run</command-name>" in sent and EXPANDED in sent
    # one route at a time: `hooks install` refuses while the plugin runs the hook
    refused = subprocess.run(
        [AGENTCFG, "hooks", "install", "--host", "claude"],
        cwd=run.root,
        env={"PATH": "/usr/bin:/bin", "HOME": str(run.home)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 1
    assert "claude plugin uninstall agentcfg@agentcfg --scope user" in refused.stderr


def codex_hooks(codex: Path, root: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The hooks Codex lists for a folder, as its app server reports them (with their hashes)."""
    server = subprocess.Popen(
        [str(codex), "app-server"], cwd=root, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    try:
        for message in (
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "e2e", "version": "1"}},
            },
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [str(root)]}},
        ):
            server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        server.stdin.flush()
        for line in server.stdout:
            answer = json.loads(line)
            if answer.get("id") == 2:
                hooks: list[dict[str, Any]] = answer["result"]["data"][0]["hooks"]
                return hooks
    finally:
        server.kill()
        server.wait()
    raise AssertionError("Codex's app server gave no hook list")


def test_codex_by_its_marketplace(tmp_path: Path) -> None:
    codex = binary("codex-0.169.0", "codex")
    root, home, codex_home, env = codex_project(tmp_path)
    for args in (("marketplace", "add", str(REPO)), ("add", "agentcfg@agentcfg")):
        host_cli(codex, "plugin", *args, cwd=root, env=env)
    hooks = {hook["eventName"]: hook for hook in codex_hooks(codex, root, env)}
    assert sorted(hooks) == ["sessionStart", "stop"]  # the stop hook, and the re-injection
    for hook in hooks.values():
        assert (hook["source"], hook["pluginId"], hook["trustStatus"]) == (
            "plugin", "agentcfg@agentcfg", "untrusted",
        )  # fmt: skip
    # trusted as a person trusts them: the hashes Codex reports, under the keys Codex lists
    with (codex_home / "config.toml").open("a") as config:
        for hook in hooks.values():
            command_hash, content_hash = hook["currentHash"].split("/")
            config.write(
                f'\n[hooks.state."{hook["key"]}"]\ntrusted_hash = "{command_hash}"\n'
                f'trusted_content_hash = "{content_hash}"\n'
            )
    assert [h["trustStatus"] for h in codex_hooks(codex, root, env)] == ["trusted"] * 2
    hook = hooks["stop"]
    findings = json.loads(agentcfg(root, env, "doctor", "--json"))
    wiring = [(f["level"], f["subject"]) for f in findings if f["subject"].startswith("codex")]
    assert wiring == [("ok", "codex (plugin)"), ("warning", "codex (store)")]  # no sandbox set
    run = exec_codex(root, home, env, idle=False)
    assert not (root / ".codex").exists() and not (codex_home / "hooks.json").exists()
    assert_complete(run, codex_session(run, tmp_path))
    sent_by = f'<hook_prompt hook_run_id="stop:{hook["displayOrder"]}:{hook["sourcePath"]}">'  # the plugin's hooks file
    assert all(t.startswith(sent_by) for t in run.script.continuations())


def test_gemini_by_extensions_link_and_its_run_command(tmp_path: Path) -> None:
    gemini = binary("gemini-0.61.0", "gemini")
    root, home, env = project(tmp_path)
    (home / ".gemini").mkdir()
    auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    host_cli(gemini, "extensions", "link", str(REPO), "--consent", cwd=root, env=env)  # trusts root
    env = {**env, "GEMINI_API_KEY": "test-local", "GOOGLE_GEMINI_BASE_URL": "{url}"}
    command = [str(gemini), "-p", "/agentcfg:run e2e", "--approval-mode", "yolo", "-m", "gemini-2.5-pro"]  # fmt: skip
    run = drive("gemini", root, home, env, command, idle=False)
    assert run.proc.returncode == 0, run.failure()
    assert not (root / ".gemini" / "settings.json").exists()  # the extension's hook alone
    assert_complete(run, gemini_session(run))
    assert EXPANDED in run.script.prompts[0] and "{{args}}" not in run.script.prompts[0]
