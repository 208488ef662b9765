"""The store's limits: receipts and contracts of a roadmap of any size the hook can judge.

A step's proof is never evicted by later verify runs, the receipts kept grow with the
steps and not with the runs, and a contract of tens of thousands of steps is read back
whole, by the hook's own process too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcfg import loading, state
from agentcfg.contract import seal
from agentcfg.contract import store as contract
from agentcfg.contract.model import baseline, command_hash, judge, text_hash
from agentcfg.core.times import iso_ms
from agentcfg.errors import StateError
from agentcfg.paths import CONTRACTS, PROOFS, RECEIPTS
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost
from tests.conftest import hook_env, run_cli, write_roadmap
from tests.helpers import ledger

KEY = "0" * 32


def big_roadmap(steps: int, mark: str = " ") -> str:
    """`steps` steps with a verify line each, twenty to a phase."""
    lines = []
    for n in range(steps):
        if n % 20 == 0:
            lines.append(f"\n## Phase {n // 20 + 1}\n")
        lines.append(
            f"- [{mark}] **{n // 20 + 1}.{n % 20 + 1}** Step {n} of the roadmap "
            f"<!-- verify: echo step{n} -->"
        )
    return "\n".join(lines) + "\n"


def passing(step_id: str, text: str, command: str | None, at: float, **more: object) -> dict:
    """A receipt's fields as `roadmap done` records them."""
    return {
        "step": step_id,
        "text": text_hash(text),
        "command": command_hash(command),
        "line": command,
        "exit_code": 0,
        "duration": 0.01,
        "output": "0" * 64,
        "head": None,
        "dirty": None,
        **more,
        "at": iso_ms(at),
    }


def receipt_of(ws: Workspace, slug: str, n: int, at: float, **more: object) -> dict:
    step = loading.load(ws, slug).steps[n]
    return passing(step.id, step.text, step.verify, at, **more)


def store(ws: Workspace, slug: str, items: list[dict]) -> None:
    """The receipts as many runs of `roadmap done` would have left them, sealed, in one write."""
    sealed = [{**item, seal.FIELD: seal.sign(RECEIPTS, slug, item)} for item in items]
    state.write_json(contract.receipts_path(ws, slug), {"receipts": sealed}, compact=True)


@pytest.fixture
def two(ws: Path) -> Workspace:
    write_roadmap(ws, "r", "## Phase 1\n- [ ] **1.1** First <!-- verify: echo one -->\n"
                  "- [ ] **1.2** Second <!-- verify: echo two -->\n")  # fmt: skip
    return Workspace(ws)


def test_later_verify_runs_of_another_step_never_evict_a_steps_proof(
    two: Workspace, ws: Path
) -> None:
    roadmap = loading.load(two, "r")
    first = receipt_of(two, "r", 0, 100.0)
    later = [receipt_of(two, "r", 1, 101.0 + n) for n in range(1001)]
    store(two, "r", [first, *later[:-1]])  # as a thousand runs of `roadmap verify` left it
    contract.add_receipt(two, "r", later[-1], roadmap)
    road = ws / "roadmaps" / "r.md"
    road.write_text(road.read_text().replace("[ ]", "[x]"))
    result = run_cli("roadmap", "audit", "r", "--json")
    assert [s["status"] for s in json.loads(result.output)["steps"]] == ["proven", "proven"]
    assert result.exit_code == 0
    kept = contract.read_receipts(two, "r")
    assert [(r.step, r.at) for r in kept] == [("1.1", 100.0), ("1.2", 1101.0)]


def test_every_step_of_a_roadmap_longer_than_a_thousand_steps_keeps_its_receipt(
    ws: Path,
) -> None:
    write_roadmap(ws, "long", big_roadmap(1100))
    w = Workspace(ws)
    roadmap = loading.load(w, "long")
    made = baseline(roadmap, 10.0)
    items = [passing(s.id, s.text, s.verify, 20.0 + n) for n, s in enumerate(roadmap.steps)]
    store(w, "long", items[:-1])  # as 1099 runs of `roadmap done` left it
    contract.add_receipt(w, "long", items[-1], roadmap)
    done = loading.load(w, "long")._replace(
        steps=tuple(s._replace(mark="done") for s in roadmap.steps)
    )
    judged = judge(made, done, contract.read_receipts(w, "long"), 5000.0)
    assert (judged.proven, judged.total, judged.open_ids) == (1100, 1100, frozenset())


def test_the_receipts_kept_grow_with_the_steps_not_with_the_runs(two: Workspace) -> None:
    roadmap = loading.load(two, "r")
    for n in range(50):
        contract.add_receipt(two, "r", receipt_of(two, "r", n % 2, 100.0 + n), roadmap)
    failed = {**receipt_of(two, "r", 0, 200.0), "exit_code": 1}
    contract.add_receipt(two, "r", failed, roadmap)
    kept = contract.read_receipts(two, "r")
    # per step: its newest passing receipt, and its newest receipt when that one failed
    assert [(r.step, r.at, r.exit_code) for r in kept] == [
        ("1.1", 148.0, 0), ("1.2", 149.0, 0), ("1.1", 200.0, 1),
    ]  # fmt: skip


def test_receipts_no_step_or_contract_holds_are_bounded(two: Workspace) -> None:
    roadmap = loading.load(two, "r")
    contract.add_receipt(two, "r", receipt_of(two, "r", 0, 1.0), roadmap)
    made = baseline(roadmap, 0.5)
    with contract.lock(two, KEY, "r"):
        contract.write(two, KEY, "r", made)
    reworded = [
        passing("1.2", f"Second, take {n}", "echo two", 10.0 + n)
        for n in range(contract.RECEIPTS_KEPT + 5)
    ]
    store(two, "r", [*contract.sealed_receipts(two, "r")[0], *reworded[:-1]])
    contract.add_receipt(two, "r", reworded[-1], roadmap)
    kept = contract.read_receipts(two, "r")
    assert kept[0].step == "1.1"  # the contracted step's proof stays
    assert len(kept) == 1 + contract.RECEIPTS_KEPT  # the rest: the newest RECEIPTS_KEPT
    assert kept[-1].text == text_hash(f"Second, take {contract.RECEIPTS_KEPT + 4}")


@pytest.mark.slow  # a scale test: fifty thousand steps
def test_a_contract_of_fifty_thousand_steps_is_read_back_whole(ws: Path) -> None:
    write_roadmap(ws, "huge", big_roadmap(50_000))
    w = Workspace(ws)
    made = contract.start(w, KEY, "huge", loading.load(w, "huge"), 10.0)
    assert contract.read(w, KEY, "huge") == (made, "")
    assert contract.path_of(w, KEY, "huge").stat().st_size < state.RECORD_LIMIT


def test_a_record_the_previous_version_wrote_is_still_read(two: Workspace) -> None:
    made = baseline(loading.load(two, "r"), 10.0)
    body = {
        "mode": made.mode,
        "started_at": iso_ms(made.started_at),
        "steps": [
            {"id": t.id, "text": t.text, "verify": t.verify, "blocked": t.blocked,
             "since": iso_ms(t.since)}
            for t in made.terms
        ],
        "warned": [],
    }  # fmt: skip
    record = {"version": 1, "slug": "r", "contract": body, "digest": contract._digest(body),
              seal.FIELD: seal.sign(CONTRACTS, f"{KEY}-r", body)}  # fmt: skip
    state.write_json(contract.path_of(two, KEY, "r"), record)
    assert contract.read(two, KEY, "r") == (made, "")
    record["contract"]["steps"][0]["id"] = "1.9"
    state.write_json(contract.path_of(two, KEY, "r"), record)
    assert contract.read(two, KEY, "r") == (None, "edited by hand")


@pytest.mark.slow
def test_a_fifty_thousand_step_roadmap_claimed_and_fired_does_not_halt(ws: Path) -> None:
    write_roadmap(ws, "huge", big_roadmap(50_000))
    host = SimulatedHost(ws, env=hook_env(ws))  # every command a process of its own
    assert host.trust("huge").returncode == 0
    host.human("Work through roadmap huge.")
    assert host.claim("huge").returncode == 0
    for n in range(2):  # the second fire reads the gate's marks of all 50,000 steps too
        host.reply(f"Working ({n}).")
        fired = host.fire()
        assert fired.exit_code in (0, 2) and "Traceback" not in fired.stderr
        if fired.exit_code == 2:
            assert fired.next_step == "1.1"
        else:  # only on a machine too busy to answer in the hook's time: it then allows
            assert fired.stdout == ""
    events = ledger(ws, claims=True)
    fires = events[[e["event"] for e in events].index("claimed") + 1 :]
    assert not any(e["event"].startswith("halt") or e["event"] == "complete" for e in fires)
    # how long a fire takes is `make bench`'s to measure: a timed-out one is the one way out
    assert all(e["event"] == "engage" or "ran out of time" in e["error"] for e in fires)


def test_an_earlier_versions_proofs_of_a_long_roadmap_are_read_past_a_state_file(
    two: Workspace,
) -> None:
    many = {
        f"9.{n}": {"command": f"pytest -k step{n}", "passed_at": iso_ms(1.0)} for n in range(30_000)
    }
    path = two.state / PROOFS / "r.json"
    state.write_json(path, {"1.1": {"command": "echo one", "passed_at": iso_ms(5.0)}, **many})
    assert path.stat().st_size > state.STATE_FILE_LIMIT
    assert contract.proven_before(two, "r", "1.1", 4.0)
    assert not contract.proven_before(two, "r", "1.1", 6.0)
    assert not contract.proven_before(two, "r", "1.2", 0.0)


def test_receipts_that_cannot_be_read_are_never_written_over(two: Workspace) -> None:
    path = contract.receipts_path(two, "r")
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"receipts": []}' + b" " * contract.RECEIPTS_LIMIT)  # past the limit
    with pytest.raises(StateError, match=r"state/receipts/r.json cannot be read .* move it away"):
        contract.add_receipt(two, "r", receipt_of(two, "r", 0, 1.0), loading.load(two, "r"))
    assert path.stat().st_size > contract.RECEIPTS_LIMIT


def test_a_record_is_never_written_larger_than_it_is_read(
    two: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "RECORD_LIMIT", 1000)
    made = baseline(loading.load(two, "r"), 1.0)
    many = made._replace(terms=made.terms * 10)
    with pytest.raises(StateError, match="larger than"):
        contract.write(two, KEY, "r", many)
    assert not contract.path_of(two, KEY, "r").exists()


def test_a_contract_at_its_limit_takes_no_more_steps_and_stays_readable(
    two: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = baseline(loading.load(two, "r"), 1.0)
    with contract.lock(two, KEY, "r"):
        contract.write(two, KEY, "r", made)
    monkeypatch.setattr(state, "RECORD_LIMIT", contract.path_of(two, KEY, "r").stat().st_size)
    joining = made.terms[0]._replace(id="1.3", text=text_hash("Third"))
    contract.join(two, KEY, "r", (joining,))
    assert contract.read(two, KEY, "r") == (made, "")
