"""Trust comes from a person only: `roadmap trust` refused inside any agent's session, however
the agent set its shell's variables, with the refusal naming why."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.hostile.conftest import env_of
from tests.hostile.harness import SESSION, run_hostile

TRUST = ["roadmap", "trust", "demo", "--yes"]
AGENTCFG = [sys.executable, "-m", "agentcfg"]


def store(root: Path) -> Path:
    return root.parent / "xdg" / "agentcfg" / "trust.json"


def launcher(folder: Path, name: str, body: str) -> Path:
    """An executable script called `name`: the kernel names its process so."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755)
    return path


def under(ws: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `argv` (which starts agentcfg as a child) with every session variable cleared."""
    return subprocess.run(
        argv, capture_output=True, text=True, env=env_of(ws), cwd=ws, timeout=60, check=False
    )


def refused_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    return re.sub(r"process \d+", "process N", proc.stderr)


def test_a_parent_named_claude_refuses_trust(ws: Path, snapshot: SnapshotAssertion) -> None:
    claude = launcher(ws.parent / "bin", "claude", '#!/bin/sh\n"$@"\nexit $?\n')
    refused = under(ws, [str(claude), *AGENTCFG, *TRUST])
    assert refused_line(refused) == snapshot
    assert not store(ws).exists()


def test_a_grandparent_whose_argv0_is_claude_refuses_trust(ws: Path) -> None:
    spawn = launcher(
        ws.parent / "bin",
        "spawn.py",
        "import subprocess, sys\nsys.exit(subprocess.run(sys.argv[1:]).returncode)\n",
    )
    line = " ".join([*AGENTCFG, *TRUST])
    argv = ["bash", "-c", f'exec -a claude {sys.executable} {spawn} sh -c "{line}"']
    refused = under(ws, argv)
    assert refused_line(refused).startswith(
        "agentcfg: error: `agentcfg roadmap trust` is for a person, and this runs inside an "
        "agent's session: Claude Code (process N: claude); "
    )
    assert not store(ws).exists()


def test_node_running_a_host_s_package_refuses_trust(ws: Path) -> None:
    node = ws.parent / "bin" / "node"
    node.parent.mkdir(parents=True, exist_ok=True)
    node.symlink_to(sys.executable)
    script = launcher(
        ws.parent / "lib" / "node_modules" / "@google" / "gemini-cli" / "dist",
        "index.js",
        "import subprocess, sys\nsys.exit(subprocess.run(sys.argv[1:]).returncode)\n",
    )
    refused = under(ws, [str(node), str(script), *AGENTCFG, *TRUST, "--json"])
    assert "Gemini CLI (process N: " in refused_line(refused)
    assert json.loads(refused.stdout)["error"].startswith("`agentcfg roadmap trust` is for")
    assert not store(ws).exists()


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("CLAUDECODE", "1"),
        ("CLAUDE_CODE_ENTRYPOINT", "cli"),
        ("CODEX_SANDBOX", "seatbelt"),
        ("GEMINI_CLI", "1"),
        ("QWEN_CODE_CLI", "/x/cli-entry.js"),
        ("OPENCODE", "1"),
        ("COPILOT_CLI", "1"),
        ("CURSOR_AGENT", "1"),
        ("CLAUDE_CODE_SESSION_ID", SESSION),
    ],
)
def test_a_host_s_variable_refuses_trust(ws: Path, variable: str, value: str) -> None:
    for args in (TRUST, [*TRUST, "--json"]):
        refused = run_hostile(ws, args, 1, env=env_of(ws, **{variable: value}))
        assert f"(${variable} is set); run it from your own terminal" in refused.stderr
    assert not store(ws).exists()


def test_a_live_claim_of_the_shell_s_session_refuses_trust(claimed: Path) -> None:
    before = store(claimed).read_bytes()
    refused = run_hostile(claimed, TRUST, 1, env=env_of(claimed, AGENTCFG_SESSION_ID=SESSION))
    assert refused.stderr == (
        "agentcfg: error: `agentcfg roadmap trust` is for a person, and this runs inside an "
        f"agent's session: session {SESSION}, which holds the claim on `demo`; "
        "run it from your own terminal\n"
    )
    assert store(claimed).read_bytes() == before


def test_a_person_s_terminal_still_trusts(ws: Path) -> None:
    trusted = under(ws, [*AGENTCFG, *TRUST])
    assert trusted.returncode == 0, trusted.stderr
    assert "verify lines of `demo`; recorded in" in trusted.stdout
    assert store(ws).exists()


def test_json_on_a_terminal_still_asks(ws: Path) -> None:
    main, side = pty.openpty()
    try:
        os.write(main, b"n\n")
        proc = subprocess.run(
            [*AGENTCFG, "roadmap", "trust", "demo", "--json"],
            stdin=side, capture_output=True, text=True, env=env_of(ws), cwd=ws, timeout=60,
            check=False,
        )  # fmt: skip
    finally:
        os.close(main)
        os.close(side)
    assert proc.returncode == 1, proc
    assert "verify lines of roadmap `demo`" in proc.stderr
    assert "Trust and accept? [y/N]" in proc.stderr
    assert json.loads(proc.stdout) == {
        "error": "nothing trusted or accepted for `demo`",
        "exit_code": 1,
    }
    assert not store(ws).exists()


def test_a_host_s_trust_is_given_by_a_person_only(ws: Path) -> None:
    """`hooks install --trust` writes Codex's trust of the project and the hook: never from
    inside a session; without --trust, or as a dry run, the agent may still wire the hook."""
    codex = ws / "codex-home"  # inside: the harness allows no other write outside
    env = env_of(ws, CODEX_HOME=str(codex), CODEX_SANDBOX="seatbelt")
    args = ["hooks", "install", "--host", "codex", "--trust"]
    refused = run_hostile(ws, args, 1, env=env)
    assert refused.stderr == (
        "agentcfg: error: `agentcfg hooks install --trust` is for a person, and this runs "
        "inside an agent's session: Codex CLI ($CODEX_SANDBOX is set); "
        "run it from your own terminal\n"
    )
    assert not (codex / "config.toml").exists()
    run_hostile(ws, [*args, "--dry-run"], 0, env=env)
    run_hostile(ws, args, 0, env=env_of(ws, CODEX_HOME=str(codex)))
    assert "trusted" in (codex / "config.toml").read_text()


def test_a_person_s_stop_is_lifted_by_a_person_only(claimed: Path) -> None:
    run_hostile(claimed, ["stop", "demo"], 0)
    marker = claimed / "state" / "stops" / "demo.json"
    for env in ({"CLAUDE_CODE_SESSION_ID": "", "CLAUDECODE": "1"}, {"OPENCODE": "1"}):
        refused = run_hostile(claimed, ["resume", "demo"], 1, env=env_of(claimed, **env))
        assert refused.stderr.startswith("agentcfg: error: `agentcfg resume` is for a person")
        assert marker.exists()
    run_hostile(claimed, ["resume", "demo"], 0, env=env_of(claimed))
    assert not marker.exists()


def test_a_command_its_shell_left_behind_is_still_in_the_session(ws: Path) -> None:
    """`(agentcfg roadmap trust demo --yes &)`: its parent gone, init adopts it; the host that
    leads its session still tells."""
    line = " ".join([*AGENTCFG, *TRUST])
    out = ws.parent / "left"
    job = launcher(
        ws.parent / "bin",
        "job.sh",
        f'{line} > "{out}.out" 2> "{out}.err"; echo $? > "{out}.tmp"; mv "{out}.tmp" "{out}"\n',
    )
    body = (  # the shell that starts the job ends at once: the job's parent is gone
        f"#!/bin/sh\nsh -c 'sh {job} &'\nwhile [ ! -e \"{out}\" ]; do sleep 0.05; done\n"
    )
    claude = launcher(ws.parent / "bin", "claude", body)
    subprocess.run(
        [str(claude)], env=env_of(ws), cwd=ws, timeout=60, check=True, start_new_session=True
    )
    assert out.read_text().strip() == "1"
    stderr = Path(f"{out}.err").read_text()
    assert "an agent's session: Claude Code (process " in stderr and ": claude);" in stderr
    assert not store(ws).exists()
