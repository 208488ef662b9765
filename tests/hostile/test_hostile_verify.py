"""Verify runs against a misbehaving command: the box ticked is the one whose verify line
passed as it still reads, and a timeout holds whatever the command leaves running."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hostile.harness import run_hostile

SWAP = """\
import pathlib
path = pathlib.Path("roadmaps/swap.md")
path.write_text(path.read_text().replace("verify: sh swap.sh", "verify: sh other.sh"))
"""


def test_a_verify_line_changed_while_it_ran_ticks_nothing(ws: Path) -> None:
    (ws / "swap.py").write_text(SWAP)
    (ws / "swap.sh").write_text(f"{sys.executable} swap.py\n")
    roadmap = ws / "roadmaps" / "swap.md"
    roadmap.write_text("## Phase 1\n- [ ] **1.1** Swap <!-- verify: sh swap.sh -->\n")
    run_hostile(ws, ["roadmap", "trust", "swap"], 0)
    refused = run_hostile(ws, ["roadmap", "done", "swap", "1.1"], 1)
    assert "changed while it ran" in refused.stderr
    assert "- [ ] **1.1**" in roadmap.read_text()


@pytest.fixture
def detached(ws: Path) -> Iterator[Path]:
    """Where the verify line's detached child writes its process id; killed afterwards."""
    pid = ws / "child.pid"
    yield pid
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid.read_text()), signal.SIGKILL)


def test_a_timeout_holds_with_a_detached_child_on_stdout(ws: Path, detached: Path) -> None:
    child = (
        "import os, subprocess, sys, time; "
        "p = subprocess.Popen(['sleep', '40'], start_new_session=True); "
        f"open({str(detached)!r}, 'w').write(str(p.pid)); time.sleep(60)"
    )
    (ws / "leave.py").write_text(child)
    (ws / "agentcfg.yaml").write_text("verify: {timeout: 2s}\n")
    roadmap = ws / "roadmaps" / "leave.md"
    roadmap.write_text(
        f"## Phase 1\n- [ ] **1.1** Leave <!-- verify: {sys.executable} leave.py -->\n"
    )
    run_hostile(ws, ["roadmap", "trust", "leave"], 0)
    started = time.monotonic()
    failed = run_hostile(ws, ["roadmap", "done", "leave", "1.1"], 1, seconds=12)
    assert time.monotonic() - started < 12
    assert "timed out" in failed.stdout + failed.stderr or "2s" in failed.stdout + failed.stderr
    assert "- [ ] **1.1**" in roadmap.read_text()
