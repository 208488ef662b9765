"""The plugin route into the real Claude Code: `claude plugin validate` accepts the plugin and the
repository's marketplace, and with no `hooks install` the hook the plugin brings (by
`--plugin-dir`, or installed from the local marketplace) drives a run to `complete`;
`/agentcfg:run <slug>` reaches the model expanded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.fake_model import Script, _text, serve
from tests.e2e.test_claude_code import AGENTCFG, CLAUDE, REPO, ROADMAP, ledger

PLUGIN = REPO / "plugin"
PLUGIN_HOOK = '["${CLAUDE_PLUGIN_ROOT}/bin/agentcfg" hook stop --host claude]'


def claude(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    assert CLAUDE.exists(), "run `make e2e`, which installs the pinned Claude Code first"
    return subprocess.run(
        [str(CLAUDE), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A project holding the e2e roadmap and no host settings, and the environment to run in."""
    root, home = tmp_path / "project", tmp_path / "home"
    (root / "roadmaps").mkdir(parents=True)
    home.mkdir()
    (root / "roadmaps" / "e2e.md").write_text(ROADMAP)
    env = {
        # the plugin's shim finds the CLI on PATH, as it would for a person who installed it
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    return root, env


def run(root: Path, env: dict[str, str], prompt: str, *args: str) -> Script:
    """One headless turn against the scripted agent; the run must end `complete`."""
    script = Script("e2e", AGENTCFG)
    server = serve(script)
    try:
        proc = claude(
            "-p",
            prompt,
            "--allowedTools",
            "Bash",
            *args,
            cwd=root,
            env={
                **env,
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
                "ANTHROPIC_API_KEY": "sk-test-local",
            },
        )
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not (root / ".claude").exists()  # the hook came from the plugin alone
    events = [e["event"] for e in ledger(root)]
    assert events[-1] == "complete", events
    assert events.count("engage") == 2, events
    assert "- [x] **1.2**" in (root / "roadmaps" / "e2e.md").read_text()
    feedback = [t for t in script.texts() if "Stop hook feedback" in t]
    assert feedback and all(PLUGIN_HOOK in t for t in feedback)  # the plugin's hook, only
    return script


@pytest.mark.parametrize("target", [PLUGIN, REPO], ids=["plugin", "marketplace"])
def test_claude_validates_the_plugin_and_the_marketplace(target: Path, tmp_path: Path) -> None:
    _, env = workspace(tmp_path)
    proc = claude("plugin", "validate", str(target), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation passed" in proc.stdout
    assert "error" not in proc.stdout.lower()


def test_plugin_dir_drives_a_run_to_complete(tmp_path: Path) -> None:
    root, env = workspace(tmp_path)
    run(root, env, "Work through roadmaps/e2e.md.", "--plugin-dir", str(PLUGIN))


def test_the_marketplace_plugin_and_its_run_command(tmp_path: Path) -> None:
    root, env = workspace(tmp_path)
    for step in (("marketplace", "add", str(REPO)), ("install", "agentcfg@agentcfg")):
        proc = claude("plugin", *step, cwd=root, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    script = run(root, env, "/agentcfg:run e2e")
    first = next(r for r in script.requests if r.get("tools"))
    sent = "\n".join(_text(m.get("content")) for m in first["messages"])
    assert "<command-name>/agentcfg:run</command-name>" in sent
    assert "1. Claim it for this session: `agentcfg sessions claim e2e`." in sent  # expanded
    assert "$ARGUMENTS" not in sent
    # `hooks install` now refuses: the plugin runs the hook in this host already
    proc = subprocess.run(
        [AGENTCFG, "hooks", "install", "--host", "claude"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "claude plugin uninstall agentcfg@agentcfg --scope user" in proc.stderr
