"""The close command a continuation prints runs in `sh` as printed and ticks exactly its step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcfg.core.roadmap import Roadmap, Step, parse_roadmap, scan
from agentcfg.core.texts import continuation
from tests.conftest import run_cli

COMMAND = re.compile(r"^Close the step with `(.+)`: ", re.M)

# Labels that repeat, restart per phase, hide ids, need quoting or start with a dash.
AWKWARD = """---
execution:
  mode: autonomous
---
## Phase -1: Groundwork
- [ ] **Step 1:** pin the tools
- [/] **Step 2:** record a baseline
## 🚀 **Phase 0 — Validation**
- [ ] **Step 1:** run the suite
- [ ] plain step with no label
- [ ] 1.1 a numbered step that is another step's id
### Phase 0 Validation Checkpoint
- [?] **Step 2:** odd mark
## Phase 2a
- [ ] T001 [P] [US1] spec-kit shaped
- [ ] **SEC-002** security item
- [ ] **2a.1** a label equal to its own id
- [ ] **dup** bold phrase
- [ ] **7.7** once
- [ ] **7.8** twice
- [ ] **7.8** twice again
  - [ ] 3. nested Kiro number
- [ ] ~~struck through~~
- [✓] a mark from another tool
"""


def printed_command(slug: str, roadmap: Roadmap, step: Step) -> str:
    counts = scan(roadmap).counts
    found = COMMAND.search(continuation(slug, counts.open, counts.blocked, step, 1, 25))
    assert found is not None
    return found.group(1)


def marks(roadmap: Roadmap) -> list[tuple[str, str]]:
    return [(s.id, s.mark) for s in roadmap.steps]


def ticked(before: Roadmap, after: Roadmap) -> list[str]:
    assert [s.id for s in before.steps] == [s.id for s in after.steps]
    changed = [(a, b) for a, b in zip(before.steps, after.steps, strict=True) if a != b]
    assert all(b.mark == "done" and a.mark == "open" for a, b in changed)
    return [b.id for _, b in changed]


def test_every_printed_command_ticks_its_step_through_the_real_cli(ws: Path) -> None:
    road = ws / "roadmaps" / "awkward.md"
    road.write_text(AWKWARD)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    roadmap = parse_roadmap(road.read_text())
    assert len({s.name for s in roadmap.steps}) == len(roadmap.steps)
    closed = 0
    while (step := scan(roadmap).next) is not None:
        command = printed_command("awkward", roadmap, step)
        result = subprocess.run(
            ["sh", "-c", command], cwd=ws, env=env, capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 0, (command, result.stderr)
        after = parse_roadmap(road.read_text())
        assert ticked(roadmap, after) == [step.id], command
        roadmap, closed = after, closed + 1
    assert closed == 15
    first = parse_roadmap(AWKWARD)
    assert "'Phase -1 Step 2'" in printed_command("awkward", first, first.steps[1])


# An `agentcfg` that prints the words sh made of its arguments; the real CLI then runs
# in process with them, which keeps a few hundred commands fast.
STUB = "#!/bin/sh\nprintf '%s\\0' \"$@\"\n"

PIECES = [
    "## Phase -1\n", "## Phase 0\n", "### Phase 0 again\n", "## Phase 2a\n", "## Notes\n",
    "- [ ] plain\n", "- [/] started\n", "- [?] odd\n", "- [ ] **1.1** bold id\n",
    "- [ ] 1.2 numbered\n", "- [ ] 1. kiro top\n", "- [ ] T001 [P] tagged\n",
    "- [ ] **Step 1:** restart\n", "- [ ] Step 2: restart\n", "- [ ] **SEC-002** sec\n",
    "  - [ ] nested\n", "- [ ] **-1.1** negative\n", "- [x] done already\n",
    "- [ ] ~~struck~~\n", "\n",
]  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=25))
def test_any_roadmap_every_printed_command_ticks_exactly_its_step(
    ws: Path, tmp_path: Path, parts: list[str]
) -> None:
    stub = tmp_path / "bin" / "agentcfg"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text(STUB)
    stub.chmod(0o755)
    env = {"PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}"}
    road = ws / "roadmaps" / "gen.md"
    road.write_text("".join(parts))
    roadmap = parse_roadmap(road.read_text())
    while (step := scan(roadmap).next) is not None:
        command = printed_command("gen", roadmap, step)
        words = subprocess.run(
            ["sh", "-c", command], env=env, capture_output=True, check=True
        ).stdout.split(b"\0")[:-1]
        assert words[:2] == [b"roadmap", b"done"]
        result = run_cli(*(w.decode() for w in words))
        assert result.exit_code == 0, (command, result.output)
        after = parse_roadmap(road.read_text())
        assert ticked(roadmap, after) == [step.id], command
        roadmap = after


@pytest.mark.parametrize("query", ["phase 0 step 1", "PHASE 0 STEP 1", "0.1", "run the"])
def test_done_finds_a_step_by_label_id_or_text_in_any_case(ws: Path, query: str) -> None:
    (ws / "roadmaps" / "awkward.md").write_text(AWKWARD)
    result = run_cli("roadmap", "done", "--no-verify", "awkward", query)
    assert result.exit_code == 0, result.output
    assert (
        result.output
        == "marked step Phase 0 Step 1 done in roadmaps/awkward.md: without running its verify line (--no-verify); it has none, so its receipt says so\n"
    )
