"""The contract the agent cannot narrow, through the simulated host and real hook processes:
every way an agent can shrink its roadmap ends `halt-contract-changed` or keeps the run going,
never `complete`; only the person's `roadmap trust` changes the contract."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims
from testing.simhost import FireResult, SimulatedHost, mark_done
from tests import inprocess
from tests.conftest import write_roadmap
from tests.helpers import ledger

BODY = """## Phase 1 — Build
- [ ] **1.1** Write the parser <!-- verify: true -->
- [ ] **1.2** Write the ladder <!-- verify: echo ladder -->
- [ ] **1.3** Write the report <!-- verify: echo report -->

## Notes
- nothing here is a step
"""
ENDINGS = {"complete", "blocked"}


def outcomes(root: Path) -> list[str]:
    shown = ("refused", "engage", "complete", "blocked", "deferred-quality-gate")
    return [
        e["event"] for e in ledger(root) if e["event"] in shown or e["event"].startswith("halt")
    ]


def told(result: FireResult) -> str:
    assert (result.exit_code, result.stderr) == (0, "")
    line: str = json.loads(result.stdout)["systemMessage"]
    return line


@pytest.fixture
def host(ws: Path) -> SimulatedHost:
    """A claimed autonomous run with 1.1 proven and 1.2, 1.3 open."""
    write_roadmap(ws, "c", BODY)
    sim = SimulatedHost(ws, run=inprocess.run)
    assert sim.trust("c").returncode == 0
    sim.human("Work through roadmap c.")
    assert sim.claim("c").returncode == 0
    sim.reply("Starting.")
    assert sim.fire().next_step == "1.1"
    assert sim.agentcfg("roadmap", "done", "c", "1.1").returncode == 0
    return sim


def edit(root: Path, change: Callable[[str], str]) -> None:
    path = root / "roadmaps" / "c.md"
    path.write_text(change(path.read_text()))


def play(host: SimulatedHost, turns: int) -> list[FireResult]:
    results = []
    for n in range(turns):
        host.reply(f"Moving on ({n}).")
        results.append(host.fire())
    return results


def drop(*ids: str) -> Callable[[str], str]:
    return lambda text: "".join(
        line for line in text.splitlines(keepends=True) if not any(f"**{i}**" in line for i in ids)
    )


def to_notes(text: str) -> str:
    moved = [
        line for line in text.splitlines(keepends=True) if "**1.2**" in line or "**1.3**" in line
    ]
    return drop("1.2", "1.3")(text) + "".join(moved)


ROWS: dict[str, tuple[Callable[[str], str], list[str]]] = {
    "deletes the two open steps": (
        drop("1.2", "1.3"),
        ["step 1.2 was removed", "step 1.3 was removed"],
    ),
    "moves them under a Notes heading": (
        to_notes,
        ["step 1.2 was removed or moved out of every phase"],
    ),
    "marks them cancelled": (
        lambda t: t.replace("- [ ] **1.2**", "- [-] **1.2**").replace(
            "- [ ] **1.3**", "- [-] **1.3**"
        ),
        ["step 1.2 was marked cancelled", "step 1.3 was marked cancelled"],
    ),
    "marks them deferred": (
        lambda t: t.replace("- [ ] **1.2**", "- [~] **1.2**").replace(
            "- [ ] **1.3**", "- [>] **1.3**"
        ),
        ["step 1.2 was marked deferred", "step 1.3 was marked deferred"],
    ),
    "adds blocked-by to them": (
        lambda t: re.sub(r"(\*\*1\.[23]\*\* [^<]*)", r"\1<!-- blocked-by: someone --> ", t),
        ["step 1.2 was marked blocked-by someone"],
    ),
    "switches execution.mode to interactive": (
        lambda t: t.replace("mode: autonomous", "mode: interactive"),
        ["execution.mode changed from autonomous to interactive"],
    ),
    "rewrites a verify line to one trusted for another step": (
        lambda t: t.replace("verify: echo ladder", "verify: true"),
        ["step 1.2 had its verify line changed (restore `echo ladder`)"],
    ),
    "rewords a step": (
        lambda t: t.replace("Write the ladder", "Think about the ladder"),
        ["step 1.2 was reworded"],
    ),
}


@pytest.mark.parametrize("row", sorted(ROWS))
def test_each_narrowing_is_refused_once_then_halts_told(
    host: SimulatedHost, ws: Path, row: str
) -> None:
    change, named = ROWS[row]
    edit(ws, change)
    refused, halted, after = play(host, 3)
    assert refused.blocked
    assert refused.stderr.startswith("turn-end-gate: the contract of this autonomous run")
    for part in named:
        assert part in refused.stderr
    line = told(halted)
    assert line.startswith("agentcfg: roadmap `c` stopped: its contract changed during the run")
    assert "`agentcfg roadmap trust c`" in line
    for part in named:
        assert part in line
    assert (after.exit_code, after.stdout, after.stderr) == (0, "", "")  # told once
    events = outcomes(ws)
    assert events[-3:] == ["refused", "deferred-quality-gate", "halt-contract-changed"]
    assert not ENDINGS & set(events)
    halt = next(e for e in ledger(ws) if e["event"] == "halt-contract-changed")
    assert all(any(part in c for c in halt["changes"]) for part in named)
    assert (halt["proven"], halt["contract"]) == (1, 3)


def test_the_halt_line_is_what_the_person_reads(
    host: SimulatedHost, ws: Path, snapshot: SnapshotAssertion
) -> None:
    edit(ws, drop("1.3"))
    refused, halted = play(host, 2)
    assert refused.stderr == snapshot(name="refusal")
    assert told(halted) == snapshot(name="halt")


def test_a_verify_line_trusted_for_another_step_does_not_run(host: SimulatedHost, ws: Path) -> None:
    edit(ws, lambda t: t.replace("verify: echo ladder", "verify: true"))
    done = host.agentcfg("roadmap", "done", "c", "1.2")
    assert done.returncode == 1
    assert "verify lines no person has trusted (1.2 changed)" in done.stderr
    assert "- [ ] **1.2**" in (ws / "roadmaps" / "c.md").read_text()


@pytest.mark.parametrize("how", ["by hand", "--no-verify"])
def test_ticking_without_a_receipt_keeps_the_run_going(
    host: SimulatedHost, ws: Path, how: str
) -> None:
    for step in ("1.2", "1.3"):
        if how == "by hand":
            mark_done(ws / "roadmaps" / "c.md", step)
        else:
            assert host.agentcfg("roadmap", "done", "c", step, "--no-verify").returncode == 0
    results = play(host, 4)
    assert results[0].stderr.startswith(
        "turn-end-gate: step **1.2** of roadmap `c` was marked done"
    )
    assert results[1].blocked
    assert "1.2 is ticked but unproven: close it with `agentcfg roadmap done c 1.2`." in (
        results[1].stderr
    )
    assert results[1].next_step == "1.2"
    assert not ENDINGS & set(outcomes(ws))
    # the receipt closes it: the same command the continuation names
    for step in ("1.2", "1.3"):
        proved = host.agentcfg("roadmap", "done", "c", step)
        assert proved.returncode == 0, proved.stderr
        assert "its receipt is recorded now" in proved.stdout
    host.reply("Proved both.")
    assert host.fire().exit_code == 0
    complete = [e for e in ledger(ws) if e["event"] == "complete"]
    assert [(e["proven"], e["contract"]) for e in complete] == [(3, 3)]


def test_the_persons_narrowing_is_accepted_with_roadmap_trust(
    host: SimulatedHost, ws: Path
) -> None:
    edit(ws, drop("1.3"))
    (refused,) = play(host, 1)
    assert refused.stderr.startswith("turn-end-gate: the contract")
    shown = host.trust("c")  # the person, outside the session
    assert shown.returncode == 0, shown.stderr
    assert "changes to the contract since its runs began" in shown.stdout
    assert "step 1.3 was removed or moved out of every phase" in shown.stdout
    assert "the contract of 1 run on `c` now starts from the roadmap" in shown.stdout
    assert host.agentcfg("roadmap", "done", "c", "1.2").returncode == 0
    host.reply("Closed 1.2.")
    assert host.fire().exit_code == 0
    assert outcomes(ws)[-1] == "complete"
    trusted = [e for e in ledger(ws) if e["event"] == "trusted"][-1]
    assert trusted["accepted"] == ["step 1.3 was removed or moved out of every phase (put it back)"]
    assert trusted["runs"] == 1


def test_roadmap_trust_is_refused_inside_the_claimed_session(host: SimulatedHost, ws: Path) -> None:
    edit(ws, drop("1.3"))
    inside = host.agentcfg("roadmap", "trust", "c", "--yes")
    assert inside.returncode == 1
    assert inside.stderr == (
        "agentcfg: error: `agentcfg roadmap trust` is for a person, and this runs inside an "
        "agent's session: Claude Code ($CLAUDE_CODE_SESSION_ID is set); "
        "run it from your own terminal\n"
    )
    assert [e for e in ledger(ws) if e["event"] == "trusted"][1:] == []  # nothing accepted
    refused, halted = play(host, 2)
    assert refused.stderr.startswith("turn-end-gate: the contract")
    assert told(halted).startswith("agentcfg: roadmap `c` stopped: its contract changed")


def test_a_step_the_agent_adds_joins_the_contract(host: SimulatedHost, ws: Path) -> None:
    edit(ws, lambda t: t.replace("\n## Notes", "- [ ] **1.4** Write the docs\n\n## Notes"))
    play(host, 1)
    for step in ("1.2", "1.3"):
        assert host.agentcfg("roadmap", "done", "c", step).returncode == 0
    (going,) = play(host, 1)
    assert going.next_step == "1.4"
    mark_done(ws / "roadmaps" / "c.md", "1.4")  # ticked by hand: it joined, so it needs proof
    results = play(host, 2)
    assert all(r.blocked for r in results)
    assert "1.4 is ticked but unproven" in results[-1].stderr
    edit(ws, drop("1.4"))  # and once joined, it cannot be taken out again
    refused, halted = play(host, 2)
    assert "step 1.4 was removed" in refused.stderr
    assert "step 1.4 was removed" in told(halted)
    assert not ENDINGS & set(outcomes(ws))


def test_a_re_claim_does_not_drop_what_the_run_contracted(host: SimulatedHost, ws: Path) -> None:
    edit(ws, drop("1.3"))
    assert host.claim("c").returncode == 0  # the agent claims again on the narrowed roadmap
    refused, halted = play(host, 2)
    assert "step 1.3 was removed" in refused.stderr
    assert told(halted).startswith("agentcfg: roadmap `c` stopped: its contract changed")


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda p: p.unlink(), "missing"),
        (lambda p: p.write_text("{not json"), "unreadable"),
        (
            lambda p: p.write_text(
                p.read_text().replace('["1.3",', '["1.9",')  # the record's own digest
            ),
            "edited by hand",
        ),
    ],
    ids=["missing", "corrupt", "hand-edited"],
)
def test_a_bad_contract_record_halts_told_naming_it(
    host: SimulatedHost, ws: Path, damage: Callable[[Path], None], named: str
) -> None:
    key = claims.session_key(host.session_id)
    record = ws / "state" / "contracts" / f"{key}-c.json"
    assert record.exists()
    damage(record)
    (halted,) = play(host, 1)
    line = told(halted)
    assert f"the run's contract record state/contracts/{key}-c.json is {named}" in line
    assert "complete" not in outcomes(ws) and "Traceback" not in halted.stderr
