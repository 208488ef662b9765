"""`agentcfg run` on the real Codex, Gemini CLI, Qwen Code, Copilot CLI and OpenCode, headless,
against scripted models, with none of the arguments or settings that let the agent's commands
run: each ending names the refused tool call and that host's fix, and where the fix is an
argument to the run, the next run given it completes.

Gemini CLI and Qwen Code without yolo offer the model no shell at all; the scripted agent calls
it anyway, as a model that read of it elsewhere does, and the host says it refused the tool.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e import more_hosts, openai_model
from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg
from tests.e2e.test_opencode import configure
from tests.e2e.test_run import (
    Driven,
    RunScript,
    codex_setup,
    gemini_setup,
    model,
    run_openai,
    with_url,
)


def permissions(run: Driven, title: str) -> tuple[dict[str, object], str]:
    """The ending's permissions entry and its line on the terminal."""
    told = run.ending()["permissions"]
    assert told is not None, run.failure()
    line = next(x for x in run.proc.stderr.splitlines() if x.startswith("  permissions: "))
    assert line.startswith(f"  permissions: {title} refused {told['refused']} tool call"), line
    assert f"(e.g. `{told['example']}`); to allow them, {told['allow']}" in line, line
    return told, line


def scripted(host: str, root: Path, home: Path, env: dict[str, str], *extra: str) -> Driven:
    """`agentcfg run` on Codex or Gemini CLI against the scripted model, `extra` after `--`."""
    script = RunScript()
    with model(host, script) as url:
        proc = subprocess.run(
            [AGENTCFG, "run", SLUG, "--host", host, "--json", "--",
             *[word.replace("{url}", url) for word in extra]],
            cwd=root, env=with_url(env, url), capture_output=True, text=True,
            timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    return Driven(root, home, script, proc)


def chat(host: str, root: Path, base: dict[str, str], env: dict[str, str], *extra: str) -> Driven:
    """`agentcfg run` on Qwen Code or Copilot CLI; the agent calls the shell even unoffered."""
    script = openai_model.Script(SLUG, AGENTCFG, unlisted="run_shell_command")
    return run_openai(host, root, base, env, script, *extra)


def test_codex_in_a_read_only_sandbox_ends_naming_the_refused_command_and_the_fix(
    tmp_path: Path,
) -> None:
    root, home, env = codex_setup(tmp_path)
    config = Path(env["CODEX_HOME"]) / "config.toml"
    config.write_text(
        config.read_text()
        .replace('approval_policy = "never"\n', "")
        .replace('sandbox_mode = "danger-full-access"', 'sandbox_mode = "read-only"')
    )
    extra = ("--skip-git-repo-check", "-c", 'model_providers.fake.base_url="{url}/v1"')
    refused = scripted("codex", root, home, env, *extra)
    assert refused.proc.returncode == 12, refused.failure()  # halt-stall
    told, _line = permissions(refused, "Codex CLI")
    assert told["example"] == f"{AGENTCFG} roadmap done {SLUG} 1.1"
    assert told["allow"] == (
        "pass `-- --sandbox workspace-write` to `agentcfg run`, or set sandbox_mode = "
        '"workspace-write" in config.toml'
    )
    assert refused.ending()["next"] == (
        f"allow the agent's commands, then: agentcfg run {SLUG} --host codex -- --sandbox "
        "workspace-write"
    )
    # the fix, as the line gives it, lets the next run complete
    allowed = scripted("codex", root, home, env, *extra, "--sandbox", "workspace-write")
    assert allowed.proc.returncode == 0, allowed.failure()
    assert allowed.ending()["ending"] == "complete" and allowed.ending()["permissions"] is None


def test_gemini_without_yolo_ends_naming_the_refused_shell_and_the_fix(tmp_path: Path) -> None:
    root, home, env = gemini_setup(tmp_path)
    refused = scripted("gemini", root, home, env, "-m", "gemini-2.5-pro")
    assert refused.proc.returncode == 12, refused.failure()
    told, _line = permissions(refused, "Gemini CLI")
    assert told["example"] == "run_shell_command"  # the tool: Gemini ran no command
    assert told["allow"] == "pass `-- --approval-mode yolo` to `agentcfg run`"
    assert refused.ending()["next"] == (
        f"allow the agent's commands, then: agentcfg run {SLUG} --host gemini -- --approval-mode yolo"
    )
    allowed = scripted("gemini", root, home, env, "-m", "gemini-2.5-pro", "--approval-mode", "yolo")
    assert allowed.proc.returncode == 0, allowed.failure()
    assert allowed.ending()["permissions"] is None


QWEN = {"OPENAI_API_KEY": "sk-local", "OPENAI_MODEL": "m", "OPENAI_BASE_URL": "{url}",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}  # fmt: skip


def test_qwen_without_yolo_ends_naming_the_refused_shell_and_the_fix(tmp_path: Path) -> None:
    root, base = more_hosts.workspace(tmp_path, "qwen", 2)
    refused = chat("qwen", root, base, QWEN, "--auth-type", "openai")
    assert refused.proc.returncode == 12, refused.failure()
    told, _line = permissions(refused, "Qwen Code")
    assert told["example"] == "run_shell_command"
    assert told["allow"] == "pass `-- --approval-mode yolo` to `agentcfg run`"
    allowed = chat("qwen", root, base, QWEN, "--auth-type", "openai", "--approval-mode", "yolo")
    assert allowed.proc.returncode == 0, allowed.failure()
    assert allowed.ending()["permissions"] is None


COPILOT = {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_API_KEY": "sk-local",
           "COPILOT_PROVIDER_BASE_URL": "{url}", "COPILOT_MODEL": "gpt-4.1"}  # fmt: skip


def test_copilot_with_no_tool_allowed_ends_naming_the_refused_command_and_the_fix(
    tmp_path: Path,
) -> None:
    root, base = more_hosts.workspace(tmp_path, "copilot", 2)
    # the project's hooks fire in an untrusted folder only with --trust-folder, which
    # `--session-id` excludes: the person's own hook does
    agentcfg(root, base, "hooks", "install", "--host", "copilot", "--scope", "user")
    # Copilot CLI allows paths in its folder and in the temporary folder: a temporary folder of
    # its own keeps our command outside both wherever this checkout lies (under /tmp in CI)
    (tmp_path / "tmp").mkdir()
    host_env = {**COPILOT, "TMPDIR": str(tmp_path / "tmp")}
    flags = ("--no-auto-update",)
    refused = chat("copilot", root, base, host_env, *flags)
    assert refused.proc.returncode == 12, refused.failure()
    told, _line = permissions(refused, "Copilot CLI")
    assert told["example"] == f"{AGENTCFG} roadmap done {SLUG} 1.1"
    # all tools allowed, the command still names a path outside the folder: refused again
    tools = chat("copilot", root, base, host_env, *flags, "--allow-all-tools")
    assert tools.ending()["permissions"] is not None, tools.failure()
    # as the fix says
    allowed = chat(
        "copilot", root, base, host_env, *flags, "--allow-all-tools", "--allow-all-paths"
    )
    assert allowed.proc.returncode == 0, allowed.failure()
    assert allowed.ending()["permissions"] is None


def test_opencode_asking_approval_for_bash_ends_naming_the_refused_command_and_the_fix(
    tmp_path: Path,
) -> None:
    """`"bash": "ask"`: the attached run refuses the first call and exits; the run's server
    refuses those the session asks afterwards, or the session would wait for ever."""
    root, env = more_hosts.workspace(tmp_path, "opencode", 2)
    model_server = openai_model.serve(openai_model.Script(SLUG, AGENTCFG))
    try:
        env = configure(root, env, f"http://127.0.0.1:{model_server.server_address[1]}")
        settings = root / "opencode.json"
        document = json.loads(settings.read_text())
        document["permission"] = {"bash": "ask"}
        settings.write_text(json.dumps(document))
        env["PATH"] = f"{Path(more_hosts.host_binary('opencode')).parent}:{env['PATH']}"
        proc = subprocess.run(
            [AGENTCFG, "run", SLUG, "--host", "opencode", "--json"],
            cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    finally:
        model_server.shutdown()
    refused = Driven(root, Path(env["HOME"]), RunScript(), proc)
    assert proc.returncode == 12, refused.failure()
    told, _line = permissions(refused, "OpenCode")
    assert told["example"] == f"{AGENTCFG} roadmap done {SLUG} 1.1"
    assert told["allow"] == 'set `"permission": {"bash": "allow"}` in opencode.json'
    assert "OpenCode headless asks approval for the agent's shell commands" in proc.stderr
    # one start: the attached run refused its first call; those after, the run's server did
    assert "  1 host start, " in proc.stderr and int(str(told["refused"])) > 1, proc.stderr
