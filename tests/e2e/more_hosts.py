"""What the Qwen Code, Copilot CLI and OpenCode end-to-end tests share: pinned binaries in the
ignored .e2e-cache, a workspace with a roadmap and the hook that `hooks install` writes, and a
scripted model on loopback. Nothing in the environment names a session: the agent's shell has
only what its host gives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import helpers
from tests.e2e.harness import AGENTCFG, binary

PACKAGES = {"qwen": "qwen-0.24.4", "copilot": "copilot-1.0.102", "opencode": "opencode-1.18.33"}


def roadmap(steps: int) -> str:
    lines = [
        f"- [ ] **1.{n}** Step number {n} <!-- verify: test -d roadmaps -->"
        for n in range(1, steps + 1)
    ]
    return (
        "---\nexecution: {mode: autonomous}\n---\n## Phase 1 — End to end\n"
        + "\n".join(lines)
        + "\n"
    )


def workspace(tmp_path: Path, host: str, steps: int) -> tuple[Path, dict[str, str]]:
    """A project with roadmaps/e2e.md and our hook installed for `host`, and the base env."""
    binary(PACKAGES[host], host)
    root, home = tmp_path / "project", tmp_path / "home"
    (root / "roadmaps").mkdir(parents=True)
    home.mkdir()
    (root / "roadmaps" / "e2e.md").write_text(roadmap(steps))
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
    for args in (("roadmap", "trust", "e2e"), ("hooks", "install", "--host", host)):
        done = subprocess.run(
            [AGENTCFG, *args], cwd=root, env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
    return root, env


def host_binary(host: str) -> str:
    return str(binary(PACKAGES[host], host))


def ledger(root: Path) -> list[dict[str, Any]]:
    """The run's events: the person's `trusted` before it belongs to no run."""
    return helpers.ledger(root, claims=True, leave=("trusted",))


def events(root: Path) -> list[str]:
    return [e["event"] for e in ledger(root) if e["event"] not in ("verified", "marked-done")]


def ticked(root: Path) -> int:
    return (root / "roadmaps" / "e2e.md").read_text().count("- [x]")
