"""`agentcfg roadmap verify` and `roadmap done`: proof before the box, and nothing else touched."""

from __future__ import annotations

import json
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion

from agentcfg import loading
from agentcfg.contract import verify
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost, mark_done
from tests import inprocess
from tests.conftest import cli_process, run_cli, write_roadmap
from tests.helpers import git, ledger

STEPS = """## Phase 1
- [ ] **1.1** Passing step <!-- verify: echo all good -->
- [ ] **1.2** Failing step <!-- verify: echo broken; exit 3 -->
- [ ] **1.3** Step without proof
- [ ] **1.4** Blocked step <!-- blocked-by: x --> <!-- verify: true -->
- [~] **1.5** Deferred step <!-- verify: true -->
- [x] **1.6** Done step <!-- verify: true -->
- [ ] **1.7** Parse the frontmatter <!-- verify: true -->
- [ ] **1.8** Parse the body <!-- verify: true -->
"""


@pytest.fixture
def road(ws: Path) -> Path:
    path = write_roadmap(ws, "v", STEPS)
    assert run_cli("roadmap", "trust", "v").exit_code == 0
    return path


def test_done_runs_the_verify_line_and_marks_only_that_box(road: Path) -> None:
    before = road.read_text()
    result = run_cli("roadmap", "done", "v", "1.1")
    assert result.exit_code == 0, result.output
    assert result.output.endswith("marked step 1.1 done in roadmaps/v.md: its verify line passed\n")
    after = road.read_text()
    assert after == before.replace("- [ ] **1.1**", "- [x] **1.1**")
    kinds = [(e["event"], e.get("step")) for e in ledger(road.parent.parent)]
    assert kinds[1:] == [("verified", "1.1"), ("marked-done", "1.1")]
    assert ledger(road.parent.parent)[1]["passed"] is True


def test_done_on_a_branch_named_in_other_letters_under_an_ascii_locale(road: Path) -> None:
    """What git tells of the workspace (its branch among it) is read as the bytes git keeps,
    UTF-8, whatever the locale's encoding: under an ASCII locale, on a branch `übersetzung`,
    `done` closes its step as anywhere else."""
    ws = road.parent.parent
    git(ws, "init", "-q", "-b", "übersetzung")
    git(ws, "add", "roadmaps")
    git(ws, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "r")
    ascii_locale = {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    done = cli_process(ws, "roadmap", "done", "v", "1.1", **ascii_locale)
    assert done.returncode == 0, done.stderr
    assert "- [x] **1.1**" in road.read_text()


def test_a_failing_verify_line_leaves_the_file_alone(
    road: Path, snapshot: SnapshotAssertion
) -> None:
    before = road.read_bytes()
    result = run_cli("roadmap", "done", "v", "1.2")
    assert result.exit_code == 1
    assert road.read_bytes() == before
    assert re.sub(r"\d+\.\ds\)", "N.Ns)", result.output) == snapshot
    assert [e["event"] for e in ledger(road.parent.parent)] == ["trusted", "verified"]


def test_a_timeout_fails_and_ends_the_command(road: Path) -> None:
    (road.parent.parent / "agentcfg.yaml").write_text("verify: {timeout: 1}\n")
    road.write_text(road.read_text().replace("echo all good", "sleep 30"))
    assert run_cli("roadmap", "trust", "v").exit_code == 0
    result = run_cli("roadmap", "verify", "v", "1.1", "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data[0]["timed_out"] is True and data[0]["duration"] < 10


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("1.3", "step 1.3 has no verify line; pass --no-verify to mark it anyway"),
        ("1.4", "step 1.4 is blocked-by x"),
        ("1.5", "step 1.5 is deferred, not open"),
        ("9.9", "no step `9.9`: give a step id or label, or the start of its text"),
        ("Parse the", "`Parse the` matches 2 steps (1.7, 1.8); give more of the text or the id"),
    ],
)
def test_refusals(road: Path, query: str, message: str) -> None:
    before = road.read_bytes()
    result = run_cli("roadmap", "done", "v", query)
    assert result.exit_code == 1
    assert result.output == f"agentcfg: error: {message}\n"
    assert road.read_bytes() == before


def test_a_done_step_is_not_closed_again_without_its_verify_line(road: Path) -> None:
    before = road.read_bytes()
    result = run_cli("roadmap", "done", "v", "1.6", "--no-verify")
    message = "step 1.6 is done already; only its verify line can prove it"
    assert result.exit_code == 1
    assert result.output == f"agentcfg: error: {message}\n"
    assert road.read_bytes() == before


def test_lookup_by_a_unique_prefix_of_the_text(road: Path) -> None:
    result = run_cli("roadmap", "done", "v", "parse the BODY")
    assert result.exit_code == 0
    assert "- [x] **1.8** Parse the body" in road.read_text()


def test_no_verify_marks_anyway_and_says_so(road: Path) -> None:
    result = run_cli("roadmap", "done", "v", "1.3", "--no-verify")
    assert result.exit_code == 0
    assert "without running its verify line (--no-verify)" in result.output
    assert "- [x] **1.3**" in road.read_text()
    assert ledger(road.parent.parent)[-1]["verified"] is False


@pytest.mark.parametrize(
    "data",
    [
        b"## Phase 1\r\n- [ ] **1.1** a <!-- verify: true -->  \r\n- [ ] **1.2** b\r\n",
        b"## Phase 1\n- [ ] **1.1** a <!-- verify: true -->\t \n\n  trailing  \n- [ ] **1.2** b",
        b"\xef\xbb\xbf- [ ] **1.1** a <!-- verify: true -->\n1) [ ] **1.2** b",
        b"## Phase 1\n   *   [ ]   **1.1** a <!-- verify: true -->\n> quoted [ ] text\n",
    ],
    ids=["crlf and trailing spaces", "no final newline", "bom and no phases", "odd spacing"],
)
def test_byte_for_byte(ws: Path, data: bytes) -> None:
    path = ws / "roadmaps" / "b.md"
    path.write_bytes(data)
    path.chmod(0o640)
    assert run_cli("roadmap", "trust", "b").exit_code == 0
    assert run_cli("roadmap", "done", "b", "1.1").exit_code == 0
    expected = data.replace(b"[ ]", b"[x]", 1)
    assert path.read_bytes() == expected
    assert path.stat().st_mode & 0o777 == 0o640


def test_concurrent_done_on_two_steps_both_land(ws: Path) -> None:
    body = "".join(f"- [ ] **1.{n}** step {n} <!-- verify: sleep 0.2 -->\n" for n in range(1, 9))
    path = write_roadmap(ws, "c", "## Phase 1\n" + body)
    assert run_cli("roadmap", "trust", "c").exit_code == 0

    def done(n: int) -> int:
        return cli_process(ws, "roadmap", "done", "c", f"1.{n}").returncode

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(done, range(1, 9))) == [0] * 8
    assert path.read_text().count("- [x]") == 8


def test_verify_all_open_steps(road: Path, snapshot: SnapshotAssertion) -> None:
    result = run_cli("roadmap", "verify", "v")
    assert result.exit_code == 1  # 1.2 fails
    assert "\n".join(line for line in result.output.splitlines() if "s)" not in line) == snapshot
    data = json.loads(run_cli("roadmap", "verify", "v", "1.1", "--json").output)
    assert [(d["step"], d["passed"], d["exit_code"]) for d in data] == [("1.1", True, 0)]


def test_gate_refuses_an_unproven_box_and_allows_a_proven_one(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    host = SimulatedHost(ws, run=inprocess.run)
    host.human("go")
    host.trust("demo")
    host.claim("demo")
    host.reply("Starting.")
    assert host.fire().next_step == "1.2"
    mark_done(ws / "roadmaps" / "demo.md", "1.2")  # the agent ticks the box by hand
    host.reply("Step 1.2 finished.")
    refused = host.fire()
    assert refused.exit_code == 2
    assert refused.stderr == snapshot
    assert ledger(ws)[-2]["detector"] == "unproven-step"
    host.human("next")
    host.reply("Doing 1.3.")
    assert host.fire().next_step == "1.3"
    assert host.agentcfg("roadmap", "done", "demo", "1.3").returncode == 0
    host.reply("Step 1.3 finished.")
    proven = host.fire()
    assert proven.stderr.startswith("run-continuation:")  # the proven box is not refused


# -- the right box, whatever the line endings ---------------------------------------------

LINES = st.sampled_from(
    ["- [ ] open", "- [x] done", "* [ ] open", "1. [ ] open", "text", "", "  - [ ] nested open"]
)
ENDINGS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@given(st.lists(st.tuples(LINES, ENDINGS), min_size=1, max_size=12), st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_done_changes_exactly_the_box_of_its_step(
    lines: list[tuple[str, bytes]], data: st.DataObject
) -> None:
    text = b"".join(line.encode() + end for line, end in lines)
    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace(Path(folder))
        ws.roadmaps.mkdir()
        path = ws.roadmaps / "p.md"
        path.write_bytes(text)
        steps = [s for s in loading.load(ws, "p").steps if s.mark == "open"]
        if not steps:
            return
        step = data.draw(st.sampled_from(steps))
        verify.mark_done(ws, "p", step.id)
        after = path.read_bytes()
    changed = [n for n in range(len(text)) if text[n] != after[n]]
    assert len(after) == len(text) and len(changed) == 1
    assert text[changed[0] - 1 : changed[0] + 2] == b"[ ]" and after[changed[0]] == ord("x")
    # the byte changed is on the step's own line, counted as the parser counts lines
    assert len(re.findall(rb"\r\n|\r|\n", text[: changed[0]])) + 1 == step.line


@pytest.mark.parametrize(
    "data",
    [
        b"- [ ] **1.1** a <!-- verify: true -->\r- [ ] **1.2** b <!-- verify: false -->\r",
        b"- [ ] **1.1** a <!-- verify: true -->\r- [ ] **1.2** b <!-- verify: false -->",
        b"text\r\n\r- [ ] **1.1** a <!-- verify: true -->\n- [ ] **1.2** b <!-- verify: false -->",
    ],
    ids=["cr only", "cr only, no final ending", "mixed"],
)
def test_a_lone_cr_never_ticks_the_neighbour(ws: Path, data: bytes) -> None:
    path = ws / "roadmaps" / "cr.md"
    path.write_bytes(data)
    assert run_cli("roadmap", "trust", "cr").exit_code == 0
    result = run_cli("roadmap", "done", "cr", "1.1")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == data.replace(b"[ ] **1.1**", b"[x] **1.1**")


def test_trust_shows_each_command_escaped_and_done_then_runs(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    write_roadmap(ws, "t", "- [ ] **1.1** a <!-- verify: echo \x1b[8mhidden\x1b[0m; true -->\n")
    refused = run_cli("roadmap", "done", "t", "1.1")
    assert refused.exit_code == 1
    trusted = run_cli("roadmap", "trust", "t")
    assert trusted.exit_code == 0 and "\x1b" not in trusted.output
    shown = trusted.output.replace(str(ws.parent), "<tmp>")
    assert (refused.output, shown) == snapshot
    assert run_cli("roadmap", "done", "t", "1.1").exit_code == 0
