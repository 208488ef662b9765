"""Texts the agent reads: continuations and refusals, pinned by snapshots."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg.core.ladder import Caps
from agentcfg.core.roadmap import Step, parse_roadmap
from agentcfg.core.texts import (
    NOTES,
    REFUSALS,
    close_command,
    continuation,
    final_needed,
    note,
    refusal,
)


def step(verify: str | None = "pytest -k phases", text: str = "Scope checkboxes to phases") -> Step:
    return Step("1.2", "open", text, verify, None, 14, "1")


def test_with_verify_and_blocked(snapshot: SnapshotAssertion) -> None:
    assert continuation("long-horizon", 3, 1, step(), 2, 25) == snapshot


def test_without_verify(snapshot: SnapshotAssertion) -> None:
    assert continuation("long-horizon", 3, 0, step(verify=None), 1, 25) == snapshot


def test_one_open_step(snapshot: SnapshotAssertion) -> None:
    text = continuation("demo", 1, 0, step(), 25, 25)
    assert "has 1 open step —" in text
    assert text == snapshot


def test_long_step_text_is_cut_at_240(snapshot: SnapshotAssertion) -> None:
    text = continuation("demo", 2, 0, step(text="very long step " * 40), 3, 25)
    named = text.splitlines()[1].removeprefix("Next step: **1.2** ")
    named = named.removesuffix("   (roadmaps/demo.md:14)")
    assert len(named) == 240 and named.endswith("...")
    assert text == snapshot


def test_a_labelled_started_step_with_tags_and_detail(snapshot: SnapshotAssertion) -> None:
    roadmap = parse_roadmap(
        "## Phase 3: Story\n- [x] T006 done\n- [/] T007 [P] [US1] Merge two bookmark sets\n"
        "  - keep the newest title\n  - _Requirements: 2.1, 2.3_\n"
        "  - Verify: `pytest tests/test_merge.py`\n"
        "  - one\n  - two\n  - three\n  - four, not shown\n"
    )
    text = continuation("bookmarks", 2, 0, roadmap.steps[1], 4, 25)
    assert "Resume step: **T007** [P] [US1] Merge two bookmark sets" in text
    assert "(roadmaps/bookmarks.md:3)" in text
    assert "four" not in text
    assert text == snapshot


def test_a_continuation_names_the_steps_the_re_proof_reopened(snapshot: SnapshotAssertion) -> None:
    text = continuation("demo", 2, 0, step(), 5, 25, reopened=("1.2", "1.3"))
    assert "The re-proof at the run's end reopened 1.2, 1.3: their verify lines fail" in text
    assert text == snapshot


def test_the_continuation_that_asks_for_the_final_re_proof(snapshot: SnapshotAssertion) -> None:
    text = final_needed("my roadmap", 4, 25)
    assert "`agentcfg roadmap verify 'my roadmap' --final`" in text
    assert text == snapshot


def test_a_step_without_verify_gets_a_runnable_no_verify_command() -> None:
    text = continuation("demo", 1, 0, step(verify=None), 1, 25)
    assert "`agentcfg roadmap done --no-verify demo 1.2`" in text


@pytest.mark.parametrize(
    ("label", "step_id", "command"),
    [
        ("", "1.2", "agentcfg roadmap done demo 1.2"),
        ("T001", "1.1", "agentcfg roadmap done demo T001"),
        ("Phase 0 Step 3", "0.3", "agentcfg roadmap done demo 'Phase 0 Step 3'"),
        ("", "-1.1", "agentcfg roadmap done demo -- -1.1"),
        ("Phase -1 Step 1", "-1.1", "agentcfg roadmap done demo 'Phase -1 Step 1'"),
    ],
)
def test_close_commands_are_quoted_for_the_shell(label: str, step_id: str, command: str) -> None:
    named = Step(step_id, "open", "a", "true", None, 3, step_id.rsplit(".", 1)[0], label=label)
    assert close_command("demo", named) == command


QUOTES = {
    "deference": "Would you like me to continue?",
    "promissory-closing": "Now I'll run the tests.",
    "unverified-completion": "All tests pass.",
    "unproven-step": "",
    "self-exit": "blocked-by: cache-design",
    "contract-change": "step 1.3 was removed or moved out of every phase (put it back)",
}


@pytest.mark.parametrize("detector", sorted(REFUSALS))
def test_refusal_texts(detector: str, snapshot: SnapshotAssertion) -> None:
    text = refusal(detector, QUOTES[detector], slug="demo", step="1.2", command="pytest -k x")
    assert text.startswith("turn-end-gate: ")
    assert "\n" not in text  # one short paragraph
    assert text == snapshot


def test_the_unproven_step_refusal_quotes_the_step_for_the_shell() -> None:
    text = refusal("unproven-step", "", slug="demo", step="Phase 0 Step 1", command="make x")
    assert "Run `agentcfg roadmap verify demo 'Phase 0 Step 1'` (or `make x`)" in text
    assert "verify demo -- -1.2`" in refusal("unproven-step", "", slug="demo", step="-1.2")


@pytest.mark.parametrize("event", sorted(NOTES))
def test_the_lines_the_person_is_told(event: str, snapshot: SnapshotAssertion) -> None:
    caps = Caps(25, 4 * 3600.0, 3, max_tokens=2_000_000)
    text = note(event, "demo", 3, caps, problem="roadmaps/demo.md: not UTF-8")
    assert text.startswith("agentcfg: roadmap `demo` ")
    assert "\n" not in text and len(text) < 300  # one line
    assert text == snapshot


def test_events_that_are_not_told() -> None:
    for event in ("engage", "blocked", "handback-background", "deferred-quality-gate"):
        assert note(event, "demo", 0, Caps()) == ""
