"""The contract's judgement, in process: what counts as a change, what closes a step, and the
property that no sequence of agent edits ends a run `complete` while a contracted step lacks
a receipt."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.contract.model import (
    Contract,
    Receipt,
    baseline,
    command_hash,
    grown,
    judge,
    matched,
    proven,
    text_hash,
)
from agentcfg.core.ladder import Caps, Fire, RunState, decide
from agentcfg.core.roadmap import parse_roadmap, scan

VERIFIES = ("true", "echo a", "pytest -k x", None)


@dataclass
class Line:
    text: str
    verify: str | None
    mark: str = " "
    blocked: bool = False


@dataclass
class Model:
    """A roadmap an agent edits: its mode, its phase's steps, and lines under `## Notes`."""

    mode: str = "autonomous"
    steps: list[Line] = field(default_factory=list)
    notes: list[Line] = field(default_factory=list)

    def render(self) -> str:
        def item(line: Line) -> str:
            verify = f" <!-- verify: {line.verify} -->" if line.verify else ""
            blocked = " <!-- blocked-by: x -->" if line.blocked else ""
            return f"- [{line.mark}] {line.text}{verify}{blocked}\n"

        body = "".join(map(item, self.steps))
        notes = "".join(map(item, self.notes))
        return f"---\nexecution:\n  mode: {self.mode}\n---\n## Phase 1\n{body}\n## Notes\n{notes}"


def start() -> Model:
    return Model(
        steps=[
            Line("Parse the roadmap", "true", "x"),
            Line("Walk the ladder", "echo a"),
            Line("Write the report", "pytest -k x"),
            Line("Write the docs", None),
        ]
    )


EDITS = st.one_of(
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("move-out"), st.integers(0, 7)),
    st.tuples(st.just("mark"), st.integers(0, 7), st.sampled_from(" x-~>/")),
    st.tuples(st.just("block"), st.integers(0, 7)),
    st.tuples(st.just("reword"), st.integers(0, 7), st.sampled_from(("Walk it", "Docs"))),
    st.tuples(st.just("verify"), st.integers(0, 7), st.sampled_from(VERIFIES)),
    st.tuples(st.just("mode"), st.sampled_from(("interactive", "phase-checkpoints", "autonomous"))),
    st.tuples(st.just("add"), st.sampled_from(("New work", "Walk the ladder", "More"))),
    st.tuples(st.just("prove"), st.integers(0, 7)),  # `roadmap done`: a real receipt
    st.tuples(st.just("turn")),  # a turn end with nothing edited
)


def apply(model: Model, edit: tuple[object, ...], receipts: list[Receipt], now: float) -> None:
    kind = edit[0]
    if kind == "mode":
        model.mode = str(edit[1])
        return
    if kind == "add":
        model.steps.append(Line(str(edit[1]), None))
        return
    if kind == "turn" or not model.steps:
        return
    index = int(str(edit[1])) % len(model.steps)
    line = model.steps[index]
    if kind == "delete":
        del model.steps[index]
    elif kind == "move-out":
        model.notes.append(model.steps.pop(index))
    elif kind == "mark":
        line.mark = str(edit[2])
    elif kind == "block":
        line.blocked = True
    elif kind == "reword":
        line.text = str(edit[2])
    elif kind == "verify":
        line.verify = None if edit[2] is None else str(edit[2])
    elif kind == "prove" and line.mark in (" ", "/") and not line.blocked:
        step = parse_roadmap(model.render()).steps[index]  # a receipt names its step's id
        receipts.append(Receipt(step.id, text_hash(line.text), command_hash(line.verify), 0, now))
        line.mark = "x"


@settings(max_examples=100, deadline=None)
@given(st.lists(EDITS, max_size=14))
def test_no_agent_edits_end_a_run_complete_while_a_contracted_step_lacks_a_receipt(
    edits: list[tuple[object, ...]],
) -> None:
    model = start()
    contract = baseline(parse_roadmap(model.render()), 0.0)
    run, receipts = RunState.fresh(0.0), []
    caps = Caps(max_iterations=1000, wall_clock=1e9, stall_window=1000)
    for n, edit in enumerate(edits, start=1):
        apply(model, edit, receipts, float(n))
        roadmap = parse_roadmap(model.render())
        judged = judge(contract, roadmap, tuple(receipts), float(n))
        if not judged.changes:
            contract = grown(contract, judged.joining)
        fire = Fire(
            turn=f"t{n}", reply=f"r{n}", open_ids=judged.open_ids,
            blocked=scan(roadmap).counts.blocked, now=float(n), changed=bool(judged.changes),
        )  # fmt: skip
        decision = decide(run, fire, caps)
        run = decision.state
        if decision.event == "complete":
            assert all(
                proven(term, tuple(receipts), step.id if step else None)
                for term, step in matched(contract, roadmap)
            ), edits
        if decision.event == "blocked":
            assert not judged.changes and not judged.unproven, edits


def judged_after(change: str) -> tuple[str, ...]:
    before = start().render()
    contract = baseline(parse_roadmap(before), 0.0)
    return tuple(c.describe() for c in judge(contract, parse_roadmap(change), (), 1.0).changes)


def test_renumbering_is_no_change_but_each_narrowing_is_named() -> None:
    text = start().render()
    inserted = text.replace("- [ ] Walk", "- [ ] A new first step\n- [ ] Walk")
    assert judged_after(inserted) == ()  # the later steps moved down a place: same steps
    assert judged_after(text.replace("- [ ] Walk the ladder <!-- verify: echo a -->\n", "")) == (
        "step 1.2 was removed or moved out of every phase (put it back)",
    )
    assert judged_after(text.replace("echo a", "true")) == (
        "step 1.2 had its verify line changed (restore `echo a`)",
    )
    assert judged_after(text.replace("autonomous", "interactive")) == (
        "execution.mode changed from autonomous to interactive (set it back to autonomous)",
    )


def test_a_receipt_closes_only_its_own_text_and_command_made_since_it_joined() -> None:
    contract = baseline(parse_roadmap(start().render()), 10.0)
    term = contract.terms[0]  # 1.2 Walk the ladder, verify `echo a`
    good = Receipt("1.2", term.text, command_hash("echo a"), 0, 10.0)
    assert proven(term, (good,))
    assert not proven(term, (good._replace(command=command_hash("true")),))
    assert not proven(term, (good._replace(text=text_hash("Other")),))
    assert not proven(term, (good._replace(exit_code=1),))
    assert not proven(term, (good._replace(at=9.0),))  # before the run began


def test_the_record_json_round_trips_and_rejects_odd_shapes() -> None:
    contract = Contract("autonomous", 5.0, baseline(parse_roadmap(start().render()), 5.0).terms)
    assert Contract.from_json(contract.to_json()) == contract
    broken = contract.to_json()
    broken["steps"][0][3] = "no"  # [id, text, verify, blocked, since]
    assert Contract.from_json(broken) is None
    assert Contract.from_json({**contract.to_json(), "steps": [["1.2", "ab", None, False]]}) is None
    joined = contract._replace(terms=(contract.terms[0]._replace(since=7.5),))
    assert joined.to_json()["steps"][0][4] == "1970-01-01T00:00:07.500Z"  # not as it began
    assert Contract.from_json(joined.to_json()) == joined
    assert Contract.from_json({**contract.to_json(), "warned": [1]}) is None
